"""`dlpipe ui`: a read-only web view of the batches and jobs, served on 127.0.0.1.

It reads through the ops services (PollingDateIndex, BatchIndex, StatusIndex, GetItem; never a
Scan) and writes nothing: where a repair applies, it shows the CLI command to run.
"""
