"""dlpipe's adapters: one module per table, queue, bucket, the provider's HTTP API, crypto and secrets."""
