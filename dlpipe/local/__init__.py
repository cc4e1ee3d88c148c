"""dlpipe: dlpipe.local."""
