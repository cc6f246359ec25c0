"""The user's writes: eval sets and cases, and starting, stopping and resuming
runs. Each runs in one transaction and broadcasts on commit; the writes of a
run in progress are in `progress`."""
from __future__ import annotations

import re
import time

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase

from sessions_app.models import Session

from . import broadcast, worker
from .evalset_files import ParsedEvalSet, case_json, criteria_of
from .metrics import MetricSpec
from .models import EvalCase, EvalRun, EvalSet
from .selectors import eval_case_from_session, eval_case_ids

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
    save_criteria: bool = False,
) -> EvalRun:
    """A queued run of `eval_ids` (all cases when empty); `start` hands it to this
    process's worker on commit; `save_criteria` makes `specs` the set's criteria,
    the run form's defaults next time."""
    known = eval_case_ids(eval_set)
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
    if save_criteria:
        EvalSet.objects.filter(pk=eval_set.pk).update(criteria=criteria_of(specs))
    if start:
        # Robust: a failed hand-over leaves the run queued for a worker (or the reaper), never a 500.
        transaction.on_commit(lambda: worker.submit(run.pk), robust=True)
    return run


@transaction.atomic
def eval_run_stop(*, run: EvalRun) -> None:
    """Ask the run's worker to stop; a run no worker has claimed stops at once."""
    EvalRun.objects.filter(pk=run.pk, status=EvalRun.RUNNING).update(stop_requested=True)
    EvalRun.objects.filter(pk=run.pk, status=EvalRun.QUEUED).update(
        status=EvalRun.STOPPED, stop_requested=True, finished_at=timezone.now()
    )
    transaction.on_commit(lambda: broadcast.run_changed(run_pk=run.pk), robust=True)


@transaction.atomic
def eval_run_resume(*, run: EvalRun, start: bool = True) -> None:
    """Queue an interrupted or stopped run again; finished cases are not run twice."""
    updated = EvalRun.objects.filter(pk=run.pk, status__in=EvalRun.RESUMABLE).update(
        status=EvalRun.QUEUED, stop_requested=False, error="", finished_at=None, heartbeat_at=timezone.now()
    )
    if not updated:
        raise EvalError(f"Run {run.pk} is {run.status}; only a stopped, interrupted or failed run can resume.")
    transaction.on_commit(lambda: broadcast.run_changed(run_pk=run.pk), robust=True)
    if start:
        transaction.on_commit(lambda: worker.submit(run.pk), robust=True)
