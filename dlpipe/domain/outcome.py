"""A finished batch's outcome summary: why it ended as it did, readable at a glance.

Kept on the batch item (OutcomeSummary, a JSON string) within a fixed budget however large
the day: the batch's cause when it failed as a whole (a listing refusal, a queueing failure,
a timeout), and over its `failed` and `error` jobs the count per error code (the stable short
code that prefixes a job's ErrorMessage, dlpipe/domain/download_errors.py) with the first
FILES_PER_CODE FileIDs of each (the smallest, so any read order gives the same summary).
Budget: at most MAX_CODES codes (the rest folded into one `other` line with its counts),
FILES_PER_CODE FileIDs each, a cause of at most MAX_CAUSE_CHARS (redacted, then cut): under MAX_SUMMARY_BYTES
(4 KB, 1% of DynamoDB's 400 KB item limit) by construction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from dlpipe.domain.redaction import redact

MAX_CODES = 8
FILES_PER_CODE = 3
MAX_CAUSE_CHARS = 300
MAX_FILE_ID_CHARS = 120  # a named feed's FileID is at most ~110 characters
MAX_SUMMARY_BYTES = 4096
OTHER = "other"  # the line for the codes past MAX_CODES
UNKNOWN = "unknown"  # an ErrorMessage without a code prefix (or none at all)
_CODE = re.compile(r"^([a-z][a-z0-9_]{1,39}):")


def error_code(error_message: str | None) -> str:
    """The stable short code that prefixes an ErrorMessage (`code: message`), or 'unknown'."""
    match = _CODE.match(error_message or "")
    return match.group(1) if match else UNKNOWN


@dataclass(frozen=True)
class CodeCount:
    """How many of the batch's failed/error jobs carry `code`, and the first few FileIDs."""

    code: str
    count: int
    files: tuple[str, ...] = ()

    def text(self) -> str:
        """'wrong_key: 20 (accounts-2026-02-28, ...)'."""
        more = ", ..." if self.count > len(self.files) else ""
        named = f" ({', '.join(self.files)}{more})" if self.files else ""
        return f"{self.code}: {self.count}{named}"


@dataclass(frozen=True)
class OutcomeSummary:
    """The cause (if the batch failed as a whole) and the error codes, most frequent first."""

    cause: str | None = None
    codes: tuple[CodeCount, ...] = ()

    def __post_init__(self) -> None:
        # Whoever builds it, the cause is provider and library text: masked whole, then cut
        # (a cut first could leave a piece of a secret too short to be recognised).
        if self.cause is not None:
            object.__setattr__(self, "cause", redact(self.cause)[:MAX_CAUSE_CHARS])

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to say (a clean completion)."""
        return not self.cause and not self.codes

    def text(self) -> str:
        """One line: 'cause; wrong_key: 20 (a, b, c, ...); bad_padding: 1 (d)'."""
        parts = ([self.cause] if self.cause else []) + [c.text() for c in self.codes]
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        """Plain JSON form (sorted keys give a replay identical bytes)."""
        codes = [{"code": c.code, "count": c.count, "files": list(c.files)} for c in self.codes]
        return {"cause": self.cause, "codes": codes}

    def to_json(self) -> str:
        """Compact JSON, at most MAX_SUMMARY_BYTES."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: object) -> OutcomeSummary:
        """Rebuild from to_dict output; ValueError if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("codes", []), list):
            raise ValueError(f"not an outcome summary: {str(data)[:80]!r}")  # noqa: TRY004 - one error type for any bad stored text
        cause = data.get("cause")
        try:
            codes = tuple(
                CodeCount(str(c["code"]), int(c["count"]), tuple(str(f) for f in c["files"]))
                for c in data.get("codes", [])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an outcome summary: {exc}") from exc
        return cls(None if cause is None else str(cause), codes)

    @classmethod
    def from_json(cls, text: str) -> OutcomeSummary:
        """Rebuild from to_json output; ValueError if it is not one."""
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ValueError(f"not an outcome summary: {exc}") from exc


@dataclass
class OutcomeTally:
    """Accumulates (code, FileID) pairs in any order; memory bounded by the distinct codes."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, list[str]] = field(default_factory=dict)

    def add(self, code: str, file_id: str) -> None:
        """Count one unsuccessful job; keep its FileID if it is among the code's smallest."""
        self.counts[code] = self.counts.get(code, 0) + 1
        kept = self.first.setdefault(code, [])
        if file_id in kept:
            return
        kept.append(file_id[:MAX_FILE_ID_CHARS])
        kept.sort()
        del kept[FILES_PER_CODE:]

    def add_jobs(self, pairs: Iterable[tuple[str | None, str]]) -> None:
        """Count (ErrorMessage, FileID) pairs."""
        for message, file_id in pairs:
            self.add(error_code(message), file_id)

    def summary(self, cause: str | None = None) -> OutcomeSummary:
        """The summary within the budget: the MAX_CODES - 1 most frequent codes, the rest
        folded into `other` (its FileIDs the smallest of the folded codes')."""
        ranked = sorted(self.counts, key=lambda c: (-self.counts[c], c))
        if len(ranked) > MAX_CODES:
            kept, folded = ranked[: MAX_CODES - 1], ranked[MAX_CODES - 1 :]
        else:
            kept, folded = ranked, []
        codes = [CodeCount(c, self.counts[c], tuple(self.first[c])) for c in kept]
        if folded:
            files = sorted(f for c in folded for f in self.first[c])[:FILES_PER_CODE]
            count = sum(self.counts[c] for c in folded)
            codes.append(CodeCount(f"{OTHER} ({len(folded)} codes)", count, tuple(files)))
        summary = OutcomeSummary(cause, tuple(codes))
        short = summary.cause
        while short and len(summary.to_json().encode()) > MAX_SUMMARY_BYTES:
            short = short[: len(short) // 2]  # escaped non-ASCII text weighs up to 6 bytes a char
            summary = OutcomeSummary(short, tuple(codes))
        return summary
