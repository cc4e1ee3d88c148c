"""The batch flow the durable poller runs: create the batch, fan out jobs, poll for completion."""
