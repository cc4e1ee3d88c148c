"""A key fixed within the re-read bound: a named feed's private key in Secrets Manager (the
emulator's) is another key, so its day's file ends `error` (wrong_key) on a fresh re-read; the
secret is given the right key and the repair `dlpipe status` prints is run at once, well within
DLPIPE_SECRET_REREAD_SECONDS (here 8 s, not 0) of that re-read. The repair's file is not ended
`error` on the old read: it is given back until the interval is spent, then the worker reads the
secret again and the day completes on the same `dlpipe worker` process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import test_repair_kit as kit
from tests.e2e.test_key_follows_secret import repair_after_the_key_is_fixed

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
ENTITIES = ("accounts",)
REREAD_S = 8  # longer than `status` + the repair take to start, so the fix lands inside it


def test_a_key_fixed_within_the_re_read_bound_completes_the_repair_after_it(
    stack: kit.Stack, tmp_path: Path
) -> None:
    events = repair_after_the_key_is_fixed(stack, tmp_path, ENTITIES, reread_s=REREAD_S)
    names = [e["event"] for e in events]
    # The repair's file met the fix inside the bound: given back once, then read again.
    due = [i for i, name in enumerate(names) if name == "job.key_reread_due"]
    # (a copy SQS hands back a moment early is given back again for the moment left)
    assert due, names
    assert names.count("secret.reread_changed") == 1, names
    assert due[-1] < names.index("secret.reread_changed"), names
