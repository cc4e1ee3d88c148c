"""dlpipe: records."""
