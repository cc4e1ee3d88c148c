"""dlpipe's services: the batch flow, the download service and the operator use cases."""
