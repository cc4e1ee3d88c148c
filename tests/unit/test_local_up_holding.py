"""Two `local up` stacks never share a key folder: the second refuses in one line naming the
first's PID, a folder left by a killed stack is taken over, and the PID file goes on exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlpipe.local.up import StackInUseError, holding


def test_a_second_stack_on_the_same_folder_is_refused_naming_the_first(tmp_path: Path) -> None:
    """While one process holds the folder, another (here a child holding it) is refused."""
    holder = subprocess.Popen(  # stopped by PID below
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from dlpipe.local.up import holding\n"
            "with holding(pathlib.Path(sys.argv[1])):\n"
            "    print('held', flush=True); sys.stdin.read()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(StackInUseError) as refused, holding(tmp_path):
            pass
        assert str(refused.value).startswith(
            f"another `dlpipe local up` (PID {holder.pid}) holds {tmp_path}: stop it first"
        )
        assert "\n" not in str(refused.value)
    finally:
        holder.kill()
        holder.wait(30)


def test_a_folder_left_by_a_killed_stack_is_taken_over_and_freed_on_exit(tmp_path: Path) -> None:
    """A PID file whose process is gone does not block; this stack's is removed when it stops."""
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    (tmp_path / "stack.pid").write_text(gone.stdout.strip())
    with holding(tmp_path):
        assert (tmp_path / "stack.pid").read_text() == str(os.getpid())
    assert not (tmp_path / "stack.pid").exists()
