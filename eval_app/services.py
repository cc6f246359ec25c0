"""Writes. Each runs in one transaction and broadcasts on commit."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.utils import timezone
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase

from sessions_app.models import Session

from . import broadcast
from .evalset_files import ParsedEvalSet, case_json, criteria_of
from .metrics import MetricSpec
from .models import HEARTBEAT_STALE, EvalCase, EvalCaseResult, EvalInvocationResult, EvalRun, EvalSet

ID_PATTERN = re.compile(r"^[A-Za-z0-9_]+$")  # what ADK's LocalEvalSetsManager accepts for new ids


class EvalError(ValueError):
    """A request the eval app refuses, with a message for the user."""


# ---- eval sets and cases ----------------------------------------------------


def require_id(value: str, what: str) -> str:
    value = (value or "").strip()
    if not ID_PATTERN.fullmatch(value):
        raise EvalError(f"{what} {value!r} must use only letters, digits and _ (ADK's rule for file names).")
    return value


@transaction.atomic
def eval_set_create(*, app_name: str, eval_set_id: str, name: str = "", description: str = "") -> EvalSet:
    eval_set_id = require_id(eval_set_id, "Eval set id")
    if EvalSet.objects.filter(app_name=app_name, eval_set_id=eval_set_id).exists():
        raise EvalError(f"Eval set {eval_set_id!r} already exists for {app_name or 'any agent'}.")
    return EvalSet.objects.create(
        app_name=app_name, eval_set_id=eval_set_id, name=name, description=description, creation_timestamp=time.time()
    )


@transaction.atomic
def eval_set_import(
    *, parsed: ParsedEvalSet, app_name: str, specs: list[MetricSpec] | None = None, replace: bool = False
) -> EvalSet:
    """Store a parsed file's eval set whole; with `replace`, its cases replace an existing set's."""
    adk_set = parsed.eval_set
    fields = {
        "name": adk_set.name or "",
        "description": adk_set.description or "",
        "creation_timestamp": adk_set.creation_timestamp,
    }
    if specs:
        fields["criteria"] = criteria_of(specs)
    eval_set = EvalSet.objects.select_for_update().filter(app_name=app_name, eval_set_id=adk_set.eval_set_id).first()
    if eval_set is None:
        eval_set = EvalSet.objects.create(app_name=app_name, eval_set_id=adk_set.eval_set_id, **fields)
    elif not replace:
        raise EvalError(f"Eval set {adk_set.eval_set_id!r} already exists; tick 'replace' to overwrite its cases.")
    else:
        EvalSet.objects.filter(pk=eval_set.pk).update(**fields, updated_at=timezone.now())
    _replace_cases(eval_set, adk_set.eval_cases)
    eval_set.refresh_from_db()
    return eval_set


def _replace_cases(eval_set: EvalSet, cases: list[AdkEvalCase]) -> None:
    """Make the set's cases exactly `cases`; a case keeping its id keeps its row (and its links)."""
    existing = {c.eval_id: c for c in eval_set.cases.all()}
    eval_set.cases.exclude(eval_id__in=[c.eval_id for c in cases]).delete()
    changed, new = [], []
    for position, case in enumerate(cases):
        row = existing.get(case.eval_id)
        if row is None:
            new.append(EvalCase(eval_set=eval_set, eval_id=case.eval_id, position=position, data=case_json(case)))
        else:
            row.position, row.data, row.updated_at = position, case_json(case), timezone.now()
            changed.append(row)
    EvalCase.objects.bulk_update(changed, ["position", "data", "updated_at"])
    EvalCase.objects.bulk_create(new)


@transaction.atomic
def eval_case_add(*, eval_set: EvalSet, case: AdkEvalCase) -> EvalCase:
    if eval_set.cases.filter(eval_id=case.eval_id).exists():
        raise EvalError(f"Eval set {eval_set.eval_set_id!r} already has a case {case.eval_id!r}.")
    position = (eval_set.cases.aggregate(last=Max("position"))["last"] or 0) + 1
    try:
        with transaction.atomic():
            return EvalCase.objects.create(eval_set=eval_set, eval_id=case.eval_id, position=position, data=case_json(case))
    except IntegrityError as exc:  # a concurrent add of the same id
        raise EvalError(f"Eval set {eval_set.eval_set_id!r} already has a case {case.eval_id!r}.") from exc


@transaction.atomic
def eval_case_update(*, case: EvalCase, data: AdkEvalCase) -> EvalCase:
    if data.eval_id != case.eval_id and case.eval_set.cases.filter(eval_id=data.eval_id).exists():
        raise EvalError(f"Eval set already has a case {data.eval_id!r}.")
    case.eval_id = data.eval_id
    case.data = case_json(data)
    case.save(update_fields=["eval_id", "data", "updated_at"])
    return case


def eval_set_delete(*, eval_set: EvalSet) -> None:
    eval_set.delete()


@transaction.atomic
def eval_case_add_from_session(
    *, session: Session, eval_set: EvalSet | None, new_eval_set_id: str, eval_id: str
) -> EvalCase:
    """Turn a stored session into a case of `eval_set` (or of a new set named `new_eval_set_id`)."""
    from .selectors import eval_case_from_session

    adk_case = eval_case_from_session(session, eval_id=require_id(eval_id, "Case id"))
    if not adk_case.conversation:
        raise EvalError("This session has no user turns to make a case of.")
    if eval_set is None:
        app_name = session.app.name
        eval_set = EvalSet.objects.filter(app_name=app_name, eval_set_id=new_eval_set_id.strip()).first()
        eval_set = eval_set or eval_set_create(app_name=app_name, eval_set_id=new_eval_set_id)
    return eval_case_add(eval_set=eval_set, case=adk_case)


def eval_case_delete(*, case: EvalCase) -> None:
    case.delete()


@transaction.atomic
def eval_set_save_criteria(*, eval_set: EvalSet, specs: list[MetricSpec]) -> None:
    EvalSet.objects.filter(pk=eval_set.pk).update(criteria=criteria_of(specs))


# ---- runs -------------------------------------------------------------------


@transaction.atomic
def eval_run_create(
    *,
    eval_set: EvalSet,
    app_name: str,
    specs: list[MetricSpec],
    eval_ids: list[str] | None = None,
    repeats: int = 1,
    concurrency: int = 1,
    source: str = "ui",
    start: bool = True,
) -> EvalRun:
    """A queued run of `eval_ids` (all cases when empty); `start` hands it to this process's worker."""
    known = list(eval_set.cases.ordered().values_list("eval_id", flat=True))
    chosen = [i for i in known if i in set(eval_ids)] if eval_ids else known
    if not chosen:
        raise EvalError("Choose at least one case to run.")
    if not specs:
        raise EvalError("Choose at least one metric.")
    if repeats < 1:
        raise EvalError("Repeats must be at least 1.")
    run = EvalRun.objects.create(
        eval_set=eval_set, app_name=app_name, metrics=[s.as_dict() for s in specs], eval_ids=chosen,
        repeats=repeats, concurrency=max(1, concurrency), source=source, total=len(chosen) * repeats,
        heartbeat_at=timezone.now(),
    )
    if start:
        transaction.on_commit(lambda: _submit(run.pk))
    return run


def _submit(run_pk: int) -> None:
    from .worker import submit  # the worker imports the engine, which imports us

    submit(run_pk)


@transaction.atomic
def eval_run_stop(*, run: EvalRun) -> None:
    """Ask the run's worker to stop; a run no worker has claimed stops at once."""
    EvalRun.objects.filter(pk=run.pk, status=EvalRun.RUNNING).update(stop_requested=True)
    EvalRun.objects.filter(pk=run.pk, status=EvalRun.QUEUED).update(
        status=EvalRun.STOPPED, stop_requested=True, finished_at=timezone.now()
    )
    transaction.on_commit(lambda: broadcast.run_changed(run_pk=run.pk))


@transaction.atomic
def eval_run_resume(*, run: EvalRun, start: bool = True) -> None:
    """Queue an interrupted or stopped run again; finished cases are not run twice."""
    updated = EvalRun.objects.filter(pk=run.pk, status__in=EvalRun.RESUMABLE).update(
        status=EvalRun.QUEUED, stop_requested=False, error="", finished_at=None, heartbeat_at=timezone.now()
    )
    if not updated:
        raise EvalError(f"Run {run.pk} is {run.status}; only a stopped, interrupted or failed run can resume.")
    transaction.on_commit(lambda: broadcast.run_changed(run_pk=run.pk))
    if start:
        transaction.on_commit(lambda: _submit(run.pk))


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
        transaction.on_commit(lambda: broadcast.run_changed(run_pk=run_pk))
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
    session_pk = (
        Session.objects.filter(app__name=outcome.app_name, user_id=outcome.user_id, session_id=outcome.session_id)
        .values_list("pk", flat=True)
        .first()
    )
    try:
        with transaction.atomic():
            result = EvalCaseResult.objects.create(
                run_id=run_pk, case_id=outcome.case_pk, eval_id=outcome.eval_id, repeat=outcome.repeat,
                position=outcome.position, status=outcome.status, metrics=outcome.metrics,
                case_data=outcome.case_data, session_id=session_pk, user_id=outcome.user_id,
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
            transaction.on_commit(lambda: broadcast.case_finished(run_pk=run_pk, result_pk=result.pk))
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
        transaction.on_commit(lambda: broadcast.run_changed(run_pk=run_pk))


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
            transaction.on_commit(lambda pk=pk: broadcast.run_changed(run_pk=pk))
    return len(pks)
