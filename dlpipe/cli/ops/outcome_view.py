"""The lines under a day's batch table that say why each batch ended as it did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from dlpipe.cli.outcome_text import outcome_text


def outcome_views(rows: Sequence[dict[str, Any]]) -> list[Text]:
    """Per batch (rows from batch_dict): its cause and errors by code, and the rerun that
    adopted its unfinished files. Plain Text: a cause like 'files[2]' is no rich markup."""
    lines: list[Text] = []
    for row in rows:
        why = outcome_text(row.get("outcome"))
        if why:
            lines.append(Text(f"{row['batch_id']} {row['status']}: {why}"))
        if row.get("adopted_by"):
            lines.append(
                Text(
                    f"{row['batch_id']}: its unfinished files were adopted by rerun"
                    f" {row['adopted_by']} (see that batch for them)"
                )
            )
    return lines
