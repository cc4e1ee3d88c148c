"""The lines under a day's batch table that say why each batch ended as it did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from dlpipe.cli.outcome_text import outcome_text
from dlpipe.cli.safe_text import plain


def outcome_views(rows: Sequence[dict[str, Any]]) -> list[Text]:
    """Per batch (rows from batch_dict): its cause and errors by code, and the rerun that
    adopted its unfinished files. Plain text, control characters made visible: a cause is provider input."""
    lines: list[Text] = []
    for row in rows:
        why = outcome_text(row.get("outcome"))
        if why:
            lines.append(plain(f"{row['batch_id']} {row['status']}: {why}"))
        if row.get("handoff_problem"):
            lines.append(plain(f"{row['batch_id']}: hand-off withheld: {row['handoff_problem']}"))
        if row.get("adopted_by"):
            lines.append(
                plain(
                    f"{row['batch_id']}: its unfinished files were adopted by rerun"
                    f" {row['adopted_by']} (see that batch for them)"
                )
            )
    return lines
