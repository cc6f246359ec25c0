"""Eval runs on django-tasks: one task per case (and repeat), any number of workers.

`run_eval_item(item_pk)` leases the item, runs the case through the engine
while a heartbeat beats (and notices a cancel), and stores the result with
the item marked done in one transaction. Workers are `manage.py db_worker`
processes (django-tasks-db), on any machine sharing the database.

django-tasks-db has no lease of its own (a task whose worker is killed stays
RUNNING), so the items have one: `reap()` queues again the items whose
heartbeat is older than `ADKUI_EVAL_LEASE_SECONDS` and hands them to a new
task. It runs at most once per beat at each task's start, in a small
`watch_run` task each run keeps queued while it has unfinished cases, and on
the pages and API reads that show a run's status.

An infrastructure fault (the database or channel layer gone) is not the
agent's: the item is queued again with backoff, and only after
`ADKUI_EVAL_MAX_ATTEMPTS` attempts stored as an `error` result naming the fault.
"""
from __future__ import annotations

import asyncio
import logging
import time
import traceback
from datetime import timedelta

from asgiref.sync import async_to_sync, sync_to_async
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone
from django_tasks import task
from django_tasks_db.backend import DatabaseBackend

from . import engine, work
from .apps import wait_for_engine
from .models import EvalCaseResult, EvalRun, EvalWorkItem
from .progress import CaseOutcome
from .work import WORKER_ID

logger = logging.getLogger(__name__)

# Faults of the infrastructure rather than the agent: retried, never its error.
DATABASE_FAULTS = (OperationalError, InterfaceError)
BACKOFF_SECONDS = 1.0  # the first retry's delay; doubled each attempt, at most a minute


class CaseCancelled(Exception):
    """The case's run was cancelled (or its item re-queued) while it ran."""


@task()
def run_eval_item(item_pk: int) -> str:
    """Run one work item; returns what became of it (for django-tasks' result)."""
    wait_for_engine()  # a worker's start imports ADK's evaluation engine on another thread
    reap_if_due()
    return execute_item(item_pk)


@task()
def watch_run(run_pk: int) -> None:
    """Reap, and stay queued (every half lease) while the run has unfinished cases,
    so a case whose worker died is picked up even when no other task starts."""
    reap()
    if work.has_unfinished(run_pk):
        _enqueue_watch(run_pk)


# ---- handing items to workers -------------------------------------------------


def start(run_pk: int, item_pks: list[int]) -> None:
    """Hand the run's queued items to workers (call on commit), and watch the run."""
    enqueue(item_pks)
    _enqueue_watch(run_pk)


def enqueue(item_pks: list[int], *, delay: float = 0.0) -> None:
    for pk in item_pks:
        enqueued = run_eval_item
        if delay and _backend().supports_defer:
            enqueued = run_eval_item.using(run_after=timezone.now() + timedelta(seconds=delay))
        result = enqueued.enqueue(pk)
        work.note_task(item_pk=pk, task_id=str(result.id))


def _enqueue_watch(run_pk: int) -> None:
    # Only where tasks wait in a queue: an immediate backend would run it now, forever.
    if _backend().supports_defer:
        at = timezone.now() + timedelta(seconds=work.lease_seconds() / 2)
        watch_run.using(run_after=at, priority=-1).enqueue(run_pk)


def _backend():
    return run_eval_item.get_backend()


# ---- the reaper -----------------------------------------------------------------

_last_reap = 0.0


def reap() -> int:
    """Queue again (and hand over) the items whose worker died, and those no
    pending task will run; returns how many. Cheap: two indexed queries when
    nothing is stale."""
    global _last_reap
    _last_reap = time.monotonic()
    in_database = isinstance(_backend(), DatabaseBackend)
    work.runs_without_items()
    pks = work.requeue_stale(tasks_in_database=in_database)
    pks += [pk for pk in work.queued_without_task(check_tasks=in_database) if pk not in pks]
    enqueue(pks)
    return len(pks)


def reap_if_due() -> None:
    if time.monotonic() - _last_reap >= work.beat_seconds():
        try:
            reap()
        except DATABASE_FAULTS:
            logger.warning("Could not reap stale eval cases", exc_info=True)


# ---- one item -------------------------------------------------------------------


def execute_item(item_pk: int, *, inline: bool = False) -> str:
    """Lease the item, run its case, store its result. `inline` (the CLI, no
    worker): a fault leaves the item queued for the caller's next pass instead
    of enqueuing a retry."""
    item = work.lease(item_pk=item_pk, worker=WORKER_ID)
    if item is None:
        return "skipped"
    try:
        outcome = async_to_sync(_evaluate_beating)(item)
        stored = work.complete(item_pk=item.pk, worker=WORKER_ID, outcome=outcome)
    except CaseCancelled:
        work.release_cancelled(item_pk=item.pk, worker=WORKER_ID)
        return "cancelled"
    except (engine.InfrastructureFault, *DATABASE_FAULTS) as exc:
        return _retry(item, exc, inline=inline)
    except Exception as exc:  # a bug of ours, not the agent's (the engine keeps those): say so, once
        logger.exception("Eval case %s could not be evaluated", item.eval_id)
        work.complete(item_pk=item.pk, worker=WORKER_ID, outcome=_error_outcome(item, exc))
        return "error"
    return "done" if stored else "dropped"


async def _evaluate_beating(item: EvalWorkItem) -> CaseOutcome:
    """The case through the engine, beating the item's heart every few seconds;
    a cancelled run (or a lost lease) cancels the case at the next beat."""
    case = asyncio.ensure_future(engine.evaluate_case(item.run, work.work_item(item)))
    while True:
        done, _ = await asyncio.wait({case}, timeout=work.beat_seconds())
        if done:
            return case.result()
        if not await _beat(item.pk):
            case.cancel()
            await asyncio.gather(case, return_exceptions=True)
            raise CaseCancelled(item.pk)


async def _beat(item_pk: int) -> bool:
    try:
        return await sync_to_async(work.beat)(item_pk=item_pk, worker=WORKER_ID)
    except DATABASE_FAULTS:  # the store will meet it too, and retry; a missed beat is no loss
        logger.warning("Eval case %s missed a heartbeat", item_pk, exc_info=True)
        return True


def _retry(item: EvalWorkItem, exc: BaseException, *, inline: bool) -> str:
    """Queue the item again with backoff, or after the last attempt store it as an error naming the fault."""
    error = fault_text(exc)
    logger.warning("Eval case %s hit an infrastructure fault (attempt %s): %s", item.eval_id, item.attempts, error)
    _drop_broken_connection()
    try:
        if item.attempts >= work.max_attempts():
            work.give_up(item=item, worker=WORKER_ID, error=error)
            return "gave up"
        if work.requeue_fault(item_pk=item.pk, worker=WORKER_ID, error=error) and not inline:
            enqueue([item.pk], delay=backoff(item.attempts))
    except DATABASE_FAULTS:
        # Still down: the item keeps our lease, goes stale, and the reaper queues it again.
        logger.warning("Could not queue eval case %s again", item.eval_id, exc_info=True)
    return "retry"


def backoff(attempts: int) -> float:
    return min(60.0, BACKOFF_SECONDS * 2 ** max(0, attempts - 1))


def fault_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _drop_broken_connection() -> None:
    # A connection the fault broke is replaced at the next query; never inside a
    # transaction someone else opened (a test's).
    if not connection.in_atomic_block:
        close_old_connections()


def _error_outcome(item: EvalWorkItem, exc: BaseException) -> CaseOutcome:
    return CaseOutcome(
        case_pk=item.case_id, eval_id=item.eval_id, repeat=item.repeat, position=item.position,
        status=EvalCaseResult.ERROR, case_data=item.case.data if item.case else {}, app_name=item.run.app_name,
        error="adkui could not evaluate this case:\n" + "".join(traceback.format_exception(exc, limit=-8)),
    )


# ---- a whole run in this process (the CLI) ------------------------------------------


def execute_inline(run_pk: int) -> None:
    """Run every queued item of the run here, one after another, retrying faults
    with backoff, until none is left (or the run is cancelled)."""
    while True:
        pks = work.queued_items(run_pk)
        if not pks:
            return
        for pk in pks:
            if execute_item(pk, inline=True) == "retry":
                attempts = EvalWorkItem.objects.filter(pk=pk).values_list("attempts", flat=True).first() or 1
                time.sleep(backoff(attempts))
        if EvalRun.objects.filter(pk=run_pk, stop_requested=True).exists():
            return
