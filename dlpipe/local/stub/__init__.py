"""The stub provider: a real HTTP server that lists, encrypts and presigns a day's files (dev and tests only)."""
