"""The one place that wires real dependencies (or the overrides a test passes) for each entry
point: `orchestrator` (the durable poller's flow and handler), `download` (the download
service, the downloader Lambda's runtime, the long-poll worker) and `ops` (the operator
commands' context). Submodules are imported on their own, so a Lambda loads only its half.
"""
