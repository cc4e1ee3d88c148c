"""dlpipe's domain: models, identifiers, status machines and their rules, the message and listing contracts, error types. Imports nothing but the standard library."""
