"""dlpipe: daily download-pipeline orchestrator on AWS."""

__version__ = "0.1.0"
