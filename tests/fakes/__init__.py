"""In-memory fakes of the services' ports, for unit tests of the services (no AWS, no HTTP)."""
