"""The download service: claim a job, stream, decrypt, verify, publish, complete."""
