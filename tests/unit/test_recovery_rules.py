"""The recovery rules: the bound a dead worker's file waits, the sweeper's decisions, the
defaults that turn self-healing on and the check that the polling window leaves room for it."""

from __future__ import annotations

import pytest

from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.model import JobStatus
from dlpipe.domain.rules import (
    RecoveryBudgetError,
    SweepAction,
    assert_recovery_fits,
    recovery_bound_seconds,
    sweep_action,
    visibility_margin_seconds,
)
from tests.support import BASE_MS, make_job

LEASE_S, RESEND_S = 300, 1800


def test_the_bound_is_the_slowest_of_redelivery_takeback_and_resend() -> None:
    """lease + margin, lease + poll interval and resend + poll interval: the largest one."""
    assert recovery_bound_seconds(300, 30, 300, 1800) == 2100
    assert recovery_bound_seconds(300, 30, 10, 60) == 330
    assert recovery_bound_seconds(300, 30, 60, 60) == 360


def test_the_margin_is_a_tenth_of_the_lease_and_at_least_a_second() -> None:
    """The visibility margin past a lease: lease/10 rounded up, never 0."""
    assert visibility_margin_seconds(300) == 30
    assert visibility_margin_seconds(3) == 1
    assert visibility_margin_seconds(1) == 1


def test_the_default_settings_heal_without_an_operator() -> None:
    """Sweeping is on by default, and the default polling window holds the recovery bound."""
    settings = Settings.from_env({})
    assert settings.sweep_requeue is True
    assert_recovery_fits(
        settings.max_polls,
        settings.poll_interval_seconds,
        settings.lease_seconds,
        visibility_margin_seconds(settings.lease_seconds),
        settings.resend_after_seconds,
    )


def test_a_polling_window_shorter_than_the_bound_is_refused() -> None:
    """6 polls x 300 s cannot wait out a 2100 s bound plus a lease: the error says what to change."""
    with pytest.raises(
        RecoveryBudgetError, match=r"1800s is shorter than the recovery bound 2100s"
    ):
        assert_recovery_fits(6, 300, LEASE_S, 30, RESEND_S)


def test_the_poller_refuses_to_start_with_such_a_window() -> None:
    """build_flow turns the refusal into a one-line ConfigError before touching AWS."""
    with pytest.raises(ConfigError, match="DLPIPE_MAX_POLLS"):
        build_flow(Settings(max_polls=6))


@pytest.mark.parametrize(
    ("status", "lease_at_ms", "updated_at_ms", "expected"),
    [
        (JobStatus.DOWNLOADING, BASE_MS - 1, BASE_MS, SweepAction.TAKE_BACK),
        (JobStatus.DOWNLOADING, BASE_MS + 1, BASE_MS, None),
        (JobStatus.AVAILABLE, None, BASE_MS - RESEND_S * 1000 - 1, SweepAction.RESEND),
        (JobStatus.AVAILABLE, None, BASE_MS - RESEND_S * 1000 + 1, None),
        (JobStatus.COMPLETED, None, 0, None),
        (JobStatus.FAILED, None, 0, None),
    ],
)
def test_the_sweeper_takes_back_expired_claims_and_resends_idle_jobs_only(
    status: JobStatus, lease_at_ms: int | None, updated_at_ms: int, expected: SweepAction | None
) -> None:
    """Expired claims are taken back, long-idle available jobs re-sent, nothing else touched."""
    job = make_job(
        "acme",
        status=status,
        lease_owner="w" if lease_at_ms else None,
        lease_expires_at_ms=lease_at_ms,
        status_updated_at_ms=updated_at_ms,
    )
    assert sweep_action(job, BASE_MS, RESEND_S) is expected
