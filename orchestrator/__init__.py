"""dlpipe: orchestrator."""
