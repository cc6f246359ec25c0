"""The user's writes: eval sets and cases, and starting, stopping and resuming
runs. Each runs in one transaction and broadcasts on commit; the writes of a
run in progress are in `progress`."""
from __future__ import annotations

import re
import time
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_metrics import EvalMetric

from sessions_app.models import Session
from sessions_app.sandbox import real_app_name

from . import progress, tasks, work
from .evalset_files import ParsedEvalSet, case_json
from .metrics import criteria_of
from .models import EvalCase, EvalRun, EvalSet
from .selectors import eval_case_from_session, eval_case_ids

_ID_CHARS = "[A-Za-z0-9_]+"  # what ADK's LocalEvalSetsManager accepts for new ids
ID_PATTERN = re.compile(f"^{_ID_CHARS}$")
ID_PATTERN_PADDED = rf"^\s*{_ID_CHARS}\s*$"  # what `require_id` accepts, as a schema's pattern: it strips padding


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
    *, parsed: ParsedEvalSet, app_name: str, metrics: list[EvalMetric] | None = None,
    user_simulator_config: dict[str, Any] | None = None, replace: bool = False,
) -> EvalSet:
    """Store a parsed file's eval set whole; `metrics` and `user_simulator_config` (a
    test_config's, both replaced when `metrics` come) as its criteria and simulator;
    with `replace`, its cases replace an existing set's."""
    adk_set = parsed.eval_set
    fields = {
        "name": adk_set.name or "",
        "description": adk_set.description or "",
        "creation_timestamp": adk_set.creation_timestamp,
    }
    if metrics:
        fields["criteria"] = criteria_of(metrics)
        fields["user_simulator_config"] = user_simulator_config
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
    *, session: Session, eval_set: EvalSet | None, new_eval_set_id: str, eval_id: str, at: int | None = None,
    final_session_state: dict[str, Any] | None = None,
) -> EvalCase:
    """Turn a stored session (up to event #`at`, when given) into a case of `eval_set` (or of a
    new set named `new_eval_set_id`), expecting `final_session_state` at its end."""
    adk_case = eval_case_from_session(session, eval_id=require_id(eval_id, "Case id"), at=at,
                                      final_session_state=final_session_state)
    if not adk_case.conversation:
        raise EvalError("This session has no user turns to make a case of" + (f" up to #{at}." if at else "."))
    if eval_set is None:
        app_name = real_app_name(session.app.name)
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
    metrics: list[EvalMetric],
    judge_model: str = "",
    user_simulator_config: dict[str, Any] | None = None,
    eval_ids: list[str] | None = None,
    repeats: int = 1,
    source: str = "ui",
    start: bool = True,
    save_criteria: bool = False,
) -> EvalRun:
    """A queued run of `eval_ids` (all cases when empty), `repeats` times, with
    one work item per (case, repeat). `start` hands the items to the task
    workers on commit; `save_criteria` makes `metrics` and `user_simulator_config`
    the set's criteria and simulator, the run form's defaults next time.
    `metrics` are ADK EvalMetrics, checked by `metrics.eval_metrics`."""
    known = eval_case_ids(eval_set)
    chosen = [i for i in known if i in set(eval_ids)] if eval_ids else known
    if not chosen:
        raise EvalError("Choose at least one case to run.")
    if not metrics:
        raise EvalError("Choose at least one metric.")
    if repeats < 1:
        raise EvalError("Repeats must be at least 1.")
    run = EvalRun.objects.create(
        eval_set=eval_set, app_name=app_name, metrics=[m.model_dump(mode="json") for m in metrics],
        judge_model=judge_model or "", user_simulator_config=user_simulator_config, eval_ids=chosen,
        repeats=repeats, source=source, total=len(chosen) * repeats,
    )
    item_pks = work.items_create(run)
    if save_criteria:
        EvalSet.objects.filter(pk=eval_set.pk).update(
            criteria=criteria_of(metrics), user_simulator_config=user_simulator_config)
    if start:
        # Robust: a failed hand-over leaves the items queued, and the reaper hands them over.
        transaction.on_commit(lambda: tasks.start(run.pk, item_pks), robust=True)
    return run


def eval_run_stop(*, run: EvalRun) -> None:
    """Cancel a queued or running run: its queued cases are cancelled at once,
    the running ones stop at their next heartbeat; the run is then `stopped`."""
    with transaction.atomic():
        # Items before the run, the order the workers lock them in.
        work.items_cancel(run.pk)
        if not EvalRun.objects.filter(pk=run.pk, status__in=EvalRun.ACTIVE).update(stop_requested=True):
            raise EvalError(f"Run {run.pk} is {_status(run)}; only a queued or running run can be cancelled.")
        progress.eval_run_refresh(run_pk=run.pk)
        progress.eval_run_changed(run_pk=run.pk)


def eval_run_resume(*, run: EvalRun, start: bool = True) -> None:
    """Queue a stopped, interrupted or failed run's unfinished cases again;
    finished cases are not run twice."""
    with transaction.atomic():
        current = EvalRun.objects.filter(pk=run.pk).first()
        if current is None or current.status not in EvalRun.RESUMABLE:
            raise EvalError(f"Run {run.pk} is {_status(run)}; only a stopped, interrupted or failed run can resume.")
        item_pks = work.items_requeue(current)
        if not item_pks:
            raise EvalError(f"Run {run.pk} has no unfinished cases to resume.")
        EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.QUEUED, stop_requested=False, error="", finished_at=None)
        progress.eval_run_refresh(run_pk=run.pk)
        progress.eval_run_changed(run_pk=run.pk)
        if start:
            transaction.on_commit(lambda: tasks.start(run.pk, item_pks), robust=True)


def _status(run: EvalRun) -> str:
    return EvalRun.objects.filter(pk=run.pk).values_list("status", flat=True).first() or "gone"


def eval_run_execute_inline(run: EvalRun) -> EvalRun:
    """Run every pending case of `run` in this process, no worker needed (the
    CLI); returns the run as it ended. Not one transaction: each case is
    stored as it finishes, like a worker's."""
    work.items_create(run)
    tasks.execute_inline(run.pk)
    run.refresh_from_db()
    return run
