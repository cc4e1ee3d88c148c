"""dlpipe: ops."""
