"""The downloader's loops: the long-poll worker and its pool, the Lambda's SQS batch."""
