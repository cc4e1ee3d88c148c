"""The stub provider: a real HTTP server that lists, encrypts and presigns a day's files (dev and tests only)."""

# Here, not in server.py, so `dlpipe provider-stub --help` shows it without loading the server.
DEFAULT_BUCKET = "dlpipe-provider-stub"
