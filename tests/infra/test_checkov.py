"""checkov, the IaC security scanner, passes terraform/ and would catch an insecure change.

checkov lives in its own virtualenv (.venv-checkov, created by `make test`) because it pins
many packages that would clash with the project's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.infra.hcl import TERRAFORM_DIR

REPO = TERRAFORM_DIR.parent
CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
ALL_FEATURES = Path(__file__).parent / "fixtures" / "all-features.tfvars"
TWO_FEEDS = Path(__file__).parent / "fixtures" / "two-feeds.tfvars"
SKIP_COMMENT = re.compile(r"#checkov:skip=(CKV2?_AWS_\d+):(.*)$")
MIN_REASON_LENGTH = 30


def run_checkov(directory: Path, *extra: str) -> dict[str, Any]:
    """Scan `directory` offline and return checkov's JSON report for the terraform framework
    (passed checks listed too: a scan of several copies is read copy by copy)."""
    if not CHECKOV.exists():
        pytest.fail(
            f"{CHECKOV} is missing: run `make test` (it installs checkov into .venv-checkov)"
        )
    # --skip-download: no calls to the vendor's platform; the scan needs no network.
    command = [str(CHECKOV), "-d", str(directory), "--framework", "terraform", "--compact"]
    command += ["--skip-download", "-o", "json", *extra]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(completed.stdout)
    reports = report if isinstance(report, list) else [report]
    (terraform,) = [r for r in reports if r.get("check_type") == "terraform"]
    return terraform


def checks_in(report: dict[str, Any], kind: str, copy: str) -> list[tuple[str, str]]:
    """(check id, resource) of every `kind` ("failed", "passed") check in the files of one
    copy of terraform/ in a scan of several (its file paths start `/{copy}/`)."""
    found = report["results"].get(f"{kind}_checks", [])
    return [(c["check_id"], c["resource"]) for c in found if c["file_path"].startswith(f"/{copy}/")]


# The variables each copy is scanned with (its terraform.tfvars, which checkov reads as it
# reads --var-file: the same checks pass as in a scan of terraform/ with the file).
CONFIGURATIONS: dict[str, Path | None] = {
    "defaults": None,
    "all-features": ALL_FEATURES,
    "two-feeds": TWO_FEEDS,
}


@pytest.mark.parametrize("copy", list(CONFIGURATIONS))
def test_checkov_finds_no_failed_check(scan: dict[str, Any], copy: str) -> None:
    """checkov reports no failed check: defaults, every optional part on, two named feeds."""
    assert scan["summary"]["parsing_errors"] == 0
    assert checks_in(scan, "failed", copy) == []
    assert len(checks_in(scan, "passed", copy)) > 100


def test_every_checkov_skip_gives_a_reason() -> None:
    """Every checkov suppression reads `#checkov:skip=CKV_...:reason` with a real reason."""
    bad = []
    for path in sorted(TERRAFORM_DIR.glob("*.tf")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if "checkov" not in line:
                continue
            match = SKIP_COMMENT.search(line.strip())
            if not match or len(match.group(2).strip()) < MIN_REASON_LENGTH:
                bad.append(f"{path.name}:{number}")
    assert bad == []


def _remove_block(text: str, header: str) -> str:
    """`text` without the top-level block that starts with the line `header`."""
    start = text.index(header)
    end = text.index("\n}\n", start) + 3
    return text[:start] + text[end:]


def _drop_public_access_block(directory: Path) -> None:
    path = directory / "s3.tf"
    path.write_text(
        _remove_block(
            path.read_text(), 'resource "aws_s3_bucket_public_access_block" "destination" {'
        )
    )


def _drop_queue_encryption(directory: Path) -> None:
    path = directory / "sqs.tf"
    text = path.read_text()
    path.write_text(text.replace("  kms_master_key_id = aws_kms_key.dlpipe.arn\n", "", 1))


def _open_queue_to_everyone(directory: Path) -> None:
    (directory / "planted.tf").write_text(
        'resource "aws_sqs_queue_policy" "planted" {\n'
        "  queue_url = aws_sqs_queue.downloads.id\n"
        "  policy = jsonencode({\n"
        '    Version = "2012-10-17"\n'
        "    Statement = [{\n"
        '      Effect = "Allow", Principal = "*", Action = "sqs:*",\n'
        "      Resource = aws_sqs_queue.downloads.arn\n"
        "    }]\n"
        "  })\n"
        "}\n"
    )


# Each planted insecure change, in its own copy of terraform/, and the failed check it must
# raise there.
PLANTED: dict[str, tuple[Callable[[Path], None], tuple[str, str]]] = {
    "public-bucket": (_drop_public_access_block, ("CKV2_AWS_6", "aws_s3_bucket.destination")),
    "plain-queue": (_drop_queue_encryption, ("CKV_AWS_27", "aws_sqs_queue.downloads")),
    "public-queue": (_open_queue_to_everyone, ("CKV_AWS_168", "aws_sqs_queue_policy.planted")),
}


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One checkov scan of a folder holding a copy of terraform/ per configuration and per
    planted change (each check's file path names its copy): one checkov start, not six."""
    root = tmp_path_factory.mktemp("checkov")
    ignore = shutil.ignore_patterns(".terraform*", "*.tfstate*")
    for name, variables in CONFIGURATIONS.items():
        shutil.copytree(TERRAFORM_DIR, root / name, ignore=ignore)
        if variables is not None:
            shutil.copy(variables, root / name / "terraform.tfvars")
    for name, (plant, _) in PLANTED.items():
        shutil.copytree(TERRAFORM_DIR, root / name, ignore=ignore)
        plant(root / name)
    return run_checkov(root)


@pytest.mark.parametrize("name", list(PLANTED))
def test_checkov_fails_on_a_planted_insecure_change(scan: dict[str, Any], name: str) -> None:
    """The scan is not vacuous: a copy of terraform/ with one insecure change fails it, in
    that copy's files."""
    _, expected = PLANTED[name]
    assert expected in checks_in(scan, "failed", name)
