"""Operator commands: days, jobs, dlq."""
