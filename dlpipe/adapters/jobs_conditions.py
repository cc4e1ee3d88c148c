"""The parts data-download-jobs' ConditionExpressions share: which job nobody holds, which
claim is held, which lease ran out. Each names the rule of dlpipe/domain/transitions.py it
mirrors; the conditions themselves, each next to the race it prevents, are jobs_writes.py's.
"""

from __future__ import annotations

from dlpipe.adapters.status_conditions import StatusClause, any_of, status_in
from dlpipe.domain.model import JobStatus
from dlpipe.domain.statuses import LEASED_JOB_STATUSES
from dlpipe.domain.transitions import job_sources

# A claim's lease ran out strictly before now, or it never had one (rule: lease_expired).
EXPIRED = "(attribute_not_exists(#lease) OR #lease < :now)"


def unheld(sources: frozenset[JobStatus]) -> StatusClause:
    """A job in `sources` that nobody holds: a leased status only once its lease ran out."""
    free = sources.difference(LEASED_JOB_STATUSES)
    leased = sources.intersection(LEASED_JOB_STATUSES)
    clauses = [status_in(free)] if free else []
    if leased:
        held = status_in(leased)
        clauses.append(StatusClause(f"{held.expression} AND {EXPIRED}", held.values))
    return any_of(*clauses)


# Claim: an available job, or a takeover of a claim whose lease ran out. Rule: may_claim.
CLAIMABLE = unheld(job_sources(JobStatus.DOWNLOADING))
# Requeue and adopt: a job nobody holds and that is not done (failed, error, available, or a
# claim whose lease ran out) goes back to available; `force` also takes a live claim.
# Rule: may_requeue (force: may_requeue(force=True)).
REQUEUABLE = unheld(job_sources(JobStatus.AVAILABLE))
FORCE_REQUEUABLE = status_in(job_sources(JobStatus.AVAILABLE))
# A claim held under a lease (whoever holds it). Rule: holds_claim.
HELD = status_in(LEASED_JOB_STATUSES)
