"""The status lists of the ConditionExpressions, built from the status table
(dlpipe/domain/statuses.py) instead of written out: a status added to the table reaches every
condition whose rule (dlpipe/domain/transitions.py) reads that part of the table.

Placeholders are `:st_{status}`; the values are the stored Status strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple

# Where the attribute's name is `#status` in both tables' ExpressionAttributeNames.
STATUS_NAME = "#status"
PLACEHOLDER_PREFIX = ":st_"


class StatusClause(NamedTuple):
    """A condition fragment on `#status` and the ExpressionAttributeValues it uses."""

    expression: str
    values: dict[str, str]


def placeholder(status: StrEnum) -> str:
    """The placeholder that stands for `status` in a condition."""
    return f"{PLACEHOLDER_PREFIX}{status.value}"


def status_in(statuses: Iterable[StrEnum]) -> StatusClause:
    """`#status` is one of `statuses` (in value order, so a condition reads the same each time)."""
    ordered = sorted(set(statuses), key=lambda s: s.value)
    if not ordered:
        raise ValueError("a status condition needs at least one status")
    values = {placeholder(s): str(s) for s in ordered}
    if len(ordered) == 1:
        return StatusClause(f"{STATUS_NAME} = {next(iter(values))}", values)
    return StatusClause(f"{STATUS_NAME} IN ({', '.join(values)})", values)


def any_of(*clauses: StatusClause) -> StatusClause:
    """The clauses joined with OR (each in parentheses), their values merged."""
    kept = [c for c in clauses if c.expression]
    expression = " OR ".join(f"({c.expression})" for c in kept)
    values = {k: v for c in kept for k, v in c.values.items()}
    return StatusClause(expression, values)
