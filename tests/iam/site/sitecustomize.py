"""Loaded by every Python child of a test session (the plugin puts this folder on PYTHONPATH).

When the session records AWS calls (IAM_RECORDING_FILE is set), the child records its own
into the same file; otherwise nothing happens. The recorder is loaded by file path, so the
child's sys.path stays as it was. Any other sitecustomize this one shadows still runs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _load_recorder() -> None:
    path = os.environ.get("IAM_RECORDING_FILE")
    if not path:
        return
    spec = importlib.util.spec_from_file_location("_iam_recorder", _HERE.parent / "recorder.py")
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install_on_import(path)


def _chain_shadowed_sitecustomize() -> None:
    others = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _load_recorder()
except Exception as exc:  # a broken recorder must not break the child process
    sys.stderr.write(f"iam recorder not installed: {type(exc).__name__}: {exc}\n")
_chain_shadowed_sitecustomize()
