"""The writes a running run makes: store each case's result, and keep the
run's status true to its work items (queued, running, completed, stopped,
failed).

Below `services` (the user's actions) and `work` (the items' leases), so the
engine and the tasks can use these without importing what starts them. Each
write broadcasts on commit, robustly: a failing broadcast never fails a case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F
from django.utils import timezone

from sessions_app import relay
from sessions_app.selectors import session_find

from . import broadcast, scores
from .models import EvalCaseResult, EvalInvocationResult, EvalRun, EvalWorkItem


def eval_run_changed(*, run_pk: int) -> None:
    """Tell the run's viewers, once the transaction commits."""
    relay.on_commit(broadcast.run_changed, run_pk=run_pk)


def eval_run_refresh(*, run_pk: int) -> str | None:
    """Set the run's status from its work items, inside the transaction that
    changed them: running while a worker holds one, queued while some wait for
    a worker (a run nobody works on is never `running`), else stopped when any
    was cancelled, failed when a case could not be evaluated (`error`), or
    completed. The run's row is locked first, so two workers finishing its last
    two cases at once cannot both miss the end."""
    run = EvalRun.objects.select_for_update().filter(pk=run_pk).first()
    if run is None:
        return None
    counts = dict(
        EvalWorkItem.objects.filter(run_id=run_pk).values_list("state").annotate(n=Count("pk")).order_by()
    )
    status = _status_of(run, counts)
    if status == run.status:
        return status
    now = timezone.now()
    fields: dict = {"status": status}
    if status == EvalRun.RUNNING and run.started_at is None:
        fields["started_at"] = now
    if status in EvalRun.ACTIVE:
        fields["finished_at"] = fields["metric_means"] = None
    else:
        fields["finished_at"] = now
        fields["elapsed_seconds"] = (now - (run.started_at or run.created_at)).total_seconds()
        fields["metric_means"] = scores.metric_means([run_pk]).get(run_pk, {})
    EvalRun.objects.filter(pk=run_pk).update(**fields)
    eval_run_changed(run_pk=run_pk)
    return status


def _status_of(run: EvalRun, counts: dict[str, int]) -> str:
    if not counts:  # a run from before work items: only a stop changes it
        return EvalRun.STOPPED if run.stop_requested and run.status in EvalRun.ACTIVE else run.status
    if counts.get(EvalWorkItem.RUNNING):
        return EvalRun.RUNNING
    if counts.get(EvalWorkItem.QUEUED):
        return EvalRun.QUEUED
    if counts.get(EvalWorkItem.CANCELLED):
        return EvalRun.STOPPED
    return EvalRun.FAILED if run.error else EvalRun.COMPLETED


@dataclass
class InvocationOutcome:
    """One actual invocation: what the agent did, and ADK's EvalMetricResult dicts for it."""

    invocation_id: str
    user_text: str
    actual: dict[str, Any]
    actual_tool_calls: list[dict[str, Any]]
    actual_response: str
    metrics: list[dict[str, Any]]


@dataclass
class CaseOutcome:
    """What running one case produced, ready to store: `metrics` are ADK's overall
    EvalMetricResult dicts, `adk_result` ADK's EvalCaseResult (without session_details),
    `judge_samples` each judge call."""

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
    adk_result: dict[str, Any] | None = None
    judge_samples: list[dict[str, Any]] = field(default_factory=list)


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
                adk_result=outcome.adk_result, judge_samples=outcome.judge_samples,
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
            )
            relay.on_commit(broadcast.case_finished, result=result)
    except IntegrityError:  # stored by an earlier attempt: a resume must not duplicate it
        return None
    return result
