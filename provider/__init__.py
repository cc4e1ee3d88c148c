"""dlpipe: provider."""
