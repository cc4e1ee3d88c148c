"""The dlpipe command line."""
