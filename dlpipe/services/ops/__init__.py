"""Operator use cases: queries, requeue and repair, DLQ redrive, backfill."""
