"""The writes a running run makes: claim it, beat its heart, store each case's
result, finish it; and the reaper's marking of runs no worker owns.

Below `services` (the user's actions), so the engine and the worker can use
these without importing what starts them. Each write broadcasts on commit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from sessions_app.selectors import session_find

from . import broadcast
from .models import HEARTBEAT_STALE, EvalCaseResult, EvalInvocationResult, EvalRun


def eval_run_claim(*, run_pk: int, worker: str) -> EvalRun | None:
    """Take a queued run (or one whose worker died) for `worker`; None if another has it."""
    now = timezone.now()
    with transaction.atomic():
        # A run whose worker died may be taken over without waiting for it to be marked interrupted.
        claimable = Q(status=EvalRun.QUEUED) | Q(status=EvalRun.RUNNING, heartbeat_at__lt=now - HEARTBEAT_STALE)
        taken = EvalRun.objects.filter(claimable, pk=run_pk).update(
            status=EvalRun.RUNNING, worker=worker, heartbeat_at=now, stop_requested=False
        )
        if not taken:
            return None
        EvalRun.objects.filter(pk=run_pk, started_at__isnull=True).update(started_at=now)
        transaction.on_commit(lambda: broadcast.run_changed(run_pk=run_pk), robust=True)
    return EvalRun.objects.select_related("eval_set").get(pk=run_pk)


def eval_run_heartbeat(*, run_pk: int, worker: str) -> bool:
    """Beat the run's heart; True when a stop was asked for (or the run is no longer ours)."""
    beat = EvalRun.objects.filter(pk=run_pk, worker=worker, status=EvalRun.RUNNING).update(heartbeat_at=timezone.now())
    if not beat:
        return True
    return EvalRun.objects.filter(pk=run_pk, stop_requested=True).exists()


@dataclass
class InvocationOutcome:
    invocation_id: str
    user_text: str
    actual: dict[str, Any]
    actual_tool_calls: list[dict[str, Any]]
    actual_response: str
    metrics: list[dict[str, Any]]


@dataclass
class CaseOutcome:
    """What running one case produced, ready to store."""

    case_pk: int | None
    eval_id: str
    repeat: int
    position: int
    status: str
    case_data: dict[str, Any]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    invocations: list[InvocationOutcome] = field(default_factory=list)
    app_name: str = ""
    user_id: str = ""
    session_id: str = ""
    error: str = ""
    agent_seconds: float = 0.0
    seconds: float = 0.0


def eval_case_result_store(*, run_pk: int, outcome: CaseOutcome) -> EvalCaseResult | None:
    """Store one finished case and count it in its run; None if it was already stored."""
    session = session_find(app_name=outcome.app_name, user_id=outcome.user_id, session_id=outcome.session_id)
    try:
        with transaction.atomic():
            result = EvalCaseResult.objects.create(
                run_id=run_pk, case_id=outcome.case_pk, eval_id=outcome.eval_id, repeat=outcome.repeat,
                position=outcome.position, status=outcome.status, metrics=outcome.metrics,
                case_data=outcome.case_data, session_id=session.pk if session else None, user_id=outcome.user_id,
                adk_session_id=outcome.session_id, error=outcome.error,
                agent_seconds=outcome.agent_seconds, seconds=outcome.seconds,
            )
            EvalInvocationResult.objects.bulk_create(
                EvalInvocationResult(case_result=result, index=i, **inv.__dict__)
                for i, inv in enumerate(outcome.invocations)
            )
            passed = outcome.status == EvalCaseResult.PASSED
            EvalRun.objects.filter(pk=run_pk).update(
                done=F("done") + 1,
                passed=F("passed") + (1 if passed else 0),
                failed=F("failed") + (0 if passed else 1),
                agent_seconds=F("agent_seconds") + outcome.agent_seconds,
                heartbeat_at=timezone.now(),
            )
            transaction.on_commit(lambda: broadcast.case_finished(result=result), robust=True)
    except IntegrityError:  # stored by an earlier attempt: a resume must not duplicate it
        return None
    return result


def eval_run_finish(*, run_pk: int, worker: str, stopped: bool = False, error: str = "", elapsed: float = 0.0) -> None:
    """Close a run its worker is done with: completed, stopped, or failed with `error`."""
    if error:
        status = EvalRun.FAILED
    elif stopped:
        status = EvalRun.STOPPED
    else:
        status = EvalRun.COMPLETED
    with transaction.atomic():
        EvalRun.objects.filter(pk=run_pk, worker=worker, status=EvalRun.RUNNING).update(
            status=status, error=error, finished_at=timezone.now(), heartbeat_at=timezone.now(),
            elapsed_seconds=F("elapsed_seconds") + elapsed,
        )
        transaction.on_commit(lambda: broadcast.run_changed(run_pk=run_pk), robust=True)


def eval_runs_mark_interrupted(
    *, alive: set[int] | frozenset[int] = frozenset(), worker: str = "", dead_workers: set[str] | None = None
) -> int:
    """Mark runs no worker owns as interrupted: their heartbeat went stale, their
    worker is known to be dead, or they name this process's `worker` yet are not
    among its `alive` runs (a crashed task)."""
    stale = timezone.now() - HEARTBEAT_STALE
    # A queued run is stamped when queued, so one whose process died unclaimed goes stale too.
    active = Q(status__in=EvalRun.ACTIVE)
    orphaned = active & (Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))
    if worker:
        orphaned |= Q(status=EvalRun.RUNNING, worker=worker) & ~Q(pk__in=alive)
    if dead_workers:
        orphaned |= Q(status=EvalRun.RUNNING, worker__in=dead_workers)
    with transaction.atomic():
        pks = list(EvalRun.objects.filter(orphaned).values_list("pk", flat=True))
        if not pks:
            return 0
        EvalRun.objects.filter(pk__in=pks, status__in=EvalRun.ACTIVE).update(
            status=EvalRun.INTERRUPTED, finished_at=timezone.now()
        )
        for pk in pks:
            transaction.on_commit(lambda pk=pk: broadcast.run_changed(run_pk=pk), robust=True)
    return len(pks)
