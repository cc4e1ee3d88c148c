"""The plan refuses sizes that do not fit: the orchestrator's memory, /tmp and set-up margin for
the largest day, and reservations past the account's quota, each in one message naming the
numbers. Terraform's sizing model and dlpipe/domain/sizing.py hold the same figures.
"""

from __future__ import annotations

from typing import Any

import pytest

from dlpipe.domain import sizing
from tests.infra.hcl import Module
from tests.infra.terraform_render import TERRAFORM, Rendered
from tests.infra.test_deployment_contract import DEFAULTS, DEPLOYMENTS, REQUIRED

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

LOCALS = Module.load().locals


def test_terraforms_sizing_figures_are_the_codes() -> None:
    """Each per-file figure of the Terraform model is the one dlpipe/domain/sizing.py states."""
    assert LOCALS["lambda_mb_per_vcpu"] == sizing.LAMBDA_MB_PER_VCPU
    assert LOCALS["manifest_cpu_ms_per_file"] == sizing.MANIFEST_CPU_MS_PER_FILE
    assert LOCALS["fanout_cpu_ms_per_file"] == sizing.FANOUT_CPU_MS_PER_FILE
    assert LOCALS["manifest_spool_bytes_per_file"] == sizing.MANIFEST_SPOOL_BYTES_PER_FILE


def test_the_defaults_fit_the_largest_day_they_promise() -> None:
    """At the default memory the write-manifest step of the default largest day takes at most
    half an invocation, its spool fits /tmp and its fan-out the set-up margin."""
    files, memory = DEFAULTS["largest_day_files"], DEFAULTS["orchestrator_memory_mb"]
    limit = DEFAULTS["orchestrator_timeout_seconds"] * sizing.STEP_SHARE_OF_INVOCATION
    assert sizing.modelled_step_seconds(sizing.MANIFEST_CPU_MS_PER_FILE, files, memory) <= limit
    fanout = sizing.modelled_step_seconds(sizing.FANOUT_CPU_MS_PER_FILE, files, memory)
    assert fanout <= DEFAULTS["durable_setup_margin_seconds"]
    tmp = DEFAULTS["orchestrator_ephemeral_storage_mb"]
    assert sizing.spool_mb(files) <= tmp * sizing.SPOOL_SHARE_OF_TMP


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return Rendered(tmp_path_factory.mktemp("sizing"), {}, preconditions=True)


def refused(checks: Rendered, variables: dict[str, Any]) -> str:
    """Terraform's words, on one line, when `variables` fail a check; AssertionError if not."""
    applied = checks.apply(variables)
    assert applied.returncode != 0, f"accepted: {variables}"
    return " ".join((applied.stdout + applied.stderr).split())


def test_too_little_memory_for_the_largest_days_manifest_is_refused(checks: Rendered) -> None:
    """512 MB (about 0.29 of a vCPU) gives a 100,000-file manifest step more than half of a
    900 s invocation: refused, naming the modelled time, the limit and the memory it needs."""
    message = refused(checks, {**REQUIRED, "orchestrator_memory_mb": 512})
    files = DEFAULTS["largest_day_files"]
    step = sizing.modelled_step_seconds(sizing.MANIFEST_CPU_MS_PER_FILE, files, 512)
    needed = sizing.minimum_memory_mb(sizing.MANIFEST_CPU_MS_PER_FILE, files, 450)
    assert needed is not None
    assert "orchestrator_memory_mb 512: the write-manifest step" in message
    assert f"modelled at {step} s, over 450 s" in message
    assert f"needs orchestrator_memory_mb {needed} or more" in message


def test_a_day_no_memory_fits_is_refused_naming_the_largest_that_does(checks: Rendered) -> None:
    """The step is single-threaded: past one vCPU (1,769 MB) memory buys it nothing, so a
    1,000,000-file day is refused at any memory, naming the largest day that fits."""
    variables = {**REQUIRED, "largest_day_files": 1_000_000, "orchestrator_memory_mb": 10240}
    message = refused(checks, variables)
    largest = sizing.largest_day_files(sizing.MANIFEST_CPU_MS_PER_FILE, 450)
    assert sizing.minimum_memory_mb(sizing.MANIFEST_CPU_MS_PER_FILE, 1_000_000, 450) is None
    assert f"lower largest_day_files to {largest} or fewer" in message


def test_a_spool_past_tmp_is_refused(checks: Rendered) -> None:
    """A 1,000,000-file day spools about 1.1 GB: 512 MB of /tmp is refused, naming both; 2 GB
    is not (the day is still refused for its manifest step's time)."""
    variables = {**REQUIRED, "largest_day_files": 1_000_000, "orchestrator_memory_mb": 10240}
    about = f"spools about {sizing.spool_mb(1_000_000)} MB in /tmp"
    message = refused(checks, variables)
    assert about in message
    assert "orchestrator_ephemeral_storage_mb 512:" in message
    larger = {**variables, "orchestrator_ephemeral_storage_mb": 2048}
    assert about not in refused(checks, larger)


def test_a_fan_out_past_the_set_up_margin_is_refused(checks: Rendered) -> None:
    """The fan-out's modelled time must fit durable_setup_margin_seconds."""
    fanout = sizing.modelled_step_seconds(
        sizing.FANOUT_CPU_MS_PER_FILE,
        DEFAULTS["largest_day_files"],
        DEFAULTS["orchestrator_memory_mb"],
    )
    message = refused(checks, {**REQUIRED, "durable_setup_margin_seconds": fanout - 1})
    assert f"durable_setup_margin_seconds {fanout - 1}: the fan-out" in message
    assert f"modelled at {fanout} s" in message


def test_reservations_past_the_accounts_quota_are_refused_naming_both_numbers(
    checks: Rendered,
) -> None:
    """The two-feed fixture: its mappings run 5 + 5 + 3 (vendor-b's own 30 % of 10) and the
    orchestrator reserves 5; a quota of 117 leaves room for 17, not 18."""
    variables = {
        **DEPLOYMENTS["two-feeds"],
        "reserve_lambda_concurrency": True,
        "lambda_account_concurrency_limit": 117,
    }
    message = refused(checks, variables)
    assert "mappings run up to 13 at once (default 5 + vendor-a 5 + vendor-b 3)" in message
    assert "exceeds 17, the account's lambda_account_concurrency_limit 117" in message
    accepted = checks.apply({**variables, "lambda_account_concurrency_limit": 1000})
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
