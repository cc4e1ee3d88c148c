"""The outage backoff: exponential, jittered, deterministic per seed, bounded by its budget."""

from __future__ import annotations

import pytest

from dlpipe.domain.outage import OutageBackoff, exhausted_message

SEEDS = [
    f"arn:aws:lambda:eu-west-1:123456789012:function:dlpipe:live/durable-execution/{n}"
    for n in range(50)
]


def test_production_schedule_without_jitter_doubles_from_30_s_to_10_min_within_2_h() -> None:
    """Unjittered: 30, 60, 120, 240, 480 s, then 10 min ten times; 6,930 s of 7,200 s used."""
    delays = OutageBackoff(jitter=0).delays_while_down("any")
    assert delays == [30, 60, 120, 240, 480] + [600] * 10
    assert sum(delays) == 6930


@pytest.mark.parametrize("seed", SEEDS)
def test_production_schedule_fills_its_2_h_budget_whatever_the_jitter(seed: str) -> None:
    """Each delay lies in [base / 2, base]; together they use the budget to within one delay."""
    backoff = OutageBackoff()
    delays = backoff.delays_while_down(seed)
    bases = [min(30 * 2**n, 600) for n in range(len(delays))]
    assert all(base / 2 <= delay <= base for delay, base in zip(delays, bases, strict=True))
    assert 7200 - 600 < sum(delays) <= 7200
    assert 16 <= len(delays) + 1 <= 30  # attempts made before the day is failed


def test_delays_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    """Replays agree on every delay; two executions (a backfill) are spread apart."""
    backoff = OutageBackoff()
    assert backoff.delays_while_down(SEEDS[0]) == backoff.delays_while_down(SEEDS[0])
    assert backoff.delays_while_down(SEEDS[0]) != backoff.delays_while_down(SEEDS[1])


def test_backoff_before_an_attempt_is_the_sum_of_the_earlier_delays() -> None:
    """Attempt 4 has waited delays 1 to 3; attempt 1 nothing."""
    backoff, seed = OutageBackoff(), SEEDS[0]
    assert backoff.backoff_before(1, seed) == 0
    assert backoff.backoff_before(4, seed) == sum(backoff.delay_seconds(n, seed) for n in (1, 2, 3))


def test_measured_time_beyond_the_schedule_counts_against_the_budget() -> None:
    """Slow attempts (stalls of minutes) end the retries sooner than the delays alone would."""
    backoff, seed = OutageBackoff(budget_seconds=3600), SEEDS[0]
    assert backoff.next_delay(2, seed, elapsed_seconds=0) is not None
    assert backoff.next_delay(2, seed, elapsed_seconds=3590) is None
    assert backoff.spent_seconds(2, seed, elapsed_seconds=3590) == 3590


def test_a_zero_budget_never_retries() -> None:
    """Budget 0: the first outage is the last attempt."""
    assert OutageBackoff(budget_seconds=0).delays_while_down(SEEDS[0]) == []


def test_delays_stay_at_the_cap_for_any_attempt_number() -> None:
    """Attempt 10,000 still gets a delay of at most 10 min (no float overflow)."""
    assert 300 <= OutageBackoff().delay_seconds(10_000, SEEDS[0]) <= 600


@pytest.mark.parametrize(
    "changes",
    [
        {"budget_seconds": -1},
        {"initial_delay_seconds": 0},
        {"initial_delay_seconds": 700},
        {"backoff_rate": 0.5},
        {"jitter": 1.0},
    ],
)
def test_nonsense_schedules_are_refused(changes: dict[str, float]) -> None:
    """Negative budgets, zero or inverted delays, shrinking backoff, full jitter: ValueError."""
    with pytest.raises(ValueError, match="got OutageBackoff"):
        OutageBackoff(**changes)


@pytest.mark.parametrize(
    ("attempts", "spent_s", "tail"),
    [(17, 7080.4, "after 17 attempts over 118 min"), (1, 0.2, "after 1 attempt over 0 s")],
)
def test_exhausted_message_names_the_cause_the_attempts_and_the_time(
    attempts: int, spent_s: float, tail: str
) -> None:
    """`provider_unavailable: <cause> after N attempts over M min` (seconds under 2 min)."""
    message = exhausted_message("GET /v1/files: HTTP 503", attempts, spent_s)
    assert message == f"provider_unavailable: GET /v1/files: HTTP 503 {tail}"
