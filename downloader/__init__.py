"""dlpipe: downloader."""
