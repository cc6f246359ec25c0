"""The work items of eval runs: creating, leasing, beating, re-queueing, finishing.

A run is one `EvalWorkItem` per (case, repeat). A worker leases a queued item
(state running, its worker id, a heartbeat), beats while the case runs, and
marks the item done in the transaction that stores the case's result. An item
whose heartbeat is older than the lease (`ADKUI_EVAL_LEASE_SECONDS`) belonged to
a worker that died: `requeue_stale` queues it again. Every change of an item
recomputes its run's status in the same transaction (`progress.eval_run_refresh`).

Only database writes: handing queued items to workers is `tasks`'.
"""
from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from . import progress
from .models import EvalCase, EvalRun, EvalWorkItem
from .progress import CaseOutcome
from .selectors import WorkItem, pending_items

# This process's worker id: its machine, its pid, and a nonce for pid reuse.
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_seconds() -> float:
    return float(settings.ADKUI_EVAL_LEASE_SECONDS)


def beat_seconds() -> float:
    """How often a worker beats: a sixth of the lease, so a few missed beats are no loss."""
    return max(0.1, lease_seconds() / 6)


def max_attempts() -> int:
    return max(1, int(settings.ADKUI_EVAL_MAX_ATTEMPTS))


# ---- creating and queueing --------------------------------------------------


def items_create(run: EvalRun) -> list[int]:
    """The run's missing items (a (case, repeat) with neither an item nor a
    result), queued; returns the pks of all its queued items."""
    have = set(run.work_items.values_list("eval_id", "repeat"))
    EvalWorkItem.objects.bulk_create(
        EvalWorkItem(run=run, case_id=i.case_pk, eval_id=i.eval_id, repeat=i.repeat, position=i.position)
        for i in pending_items(run) if (i.eval_id, i.repeat) not in have
    )
    return queued_items(run.pk)


def queued_items(run_pk: int) -> list[int]:
    return list(EvalWorkItem.objects.filter(run_id=run_pk, state=EvalWorkItem.QUEUED).values_list("pk", flat=True))


def items_cancel(run_pk: int) -> int:
    """Cancel the run's queued items; running ones stop at their next heartbeat."""
    return EvalWorkItem.objects.filter(run_id=run_pk, state=EvalWorkItem.QUEUED).update(
        state=EvalWorkItem.CANCELLED, updated_at=timezone.now()
    )


def items_requeue(run: EvalRun) -> list[int]:
    """Queue the run's cancelled items again (and create any missing); done items stay done."""
    run.work_items.filter(state=EvalWorkItem.CANCELLED).update(
        state=EvalWorkItem.QUEUED, worker="", heartbeat_at=None, attempts=0, last_error="", task_id="",
        updated_at=timezone.now(),
    )
    return items_create(run)


def note_task(*, item_pk: int, task_id: str) -> None:
    """The task just enqueued for the item (which a worker may have taken already);
    a re-queue clears it before enqueuing the next."""
    EvalWorkItem.objects.filter(pk=item_pk, task_id="").update(task_id=task_id)


# ---- a worker's lease -------------------------------------------------------


def lease(*, item_pk: int, worker: str) -> EvalWorkItem | None:
    """Take a queued item for `worker` (running, heartbeat now, one more attempt);
    None when it is done, cancelled, or another worker has it."""
    with transaction.atomic():
        taken = EvalWorkItem.objects.filter(pk=item_pk, state=EvalWorkItem.QUEUED).update(
            state=EvalWorkItem.RUNNING, worker=worker, heartbeat_at=timezone.now(), attempts=F("attempts") + 1,
            updated_at=timezone.now(),
        )
        if not taken:
            return None
        item = EvalWorkItem.objects.select_related("run__eval_set", "case").get(pk=item_pk)
        progress.eval_run_refresh(run_pk=item.run_id)
    return item


def work_item(item: EvalWorkItem) -> WorkItem:
    """What the engine runs: the case as it is now ({} when it was deleted since)."""
    case: EvalCase | None = item.case
    return WorkItem(case.pk if case else None, item.eval_id, item.position, item.repeat, case.data if case else {})


def beat(*, item_pk: int, worker: str) -> bool:
    """Beat the item's heart; False when its worker should stop: the run was
    cancelled, or the item is no longer this worker's (re-queued after a stall)."""
    EvalWorkItem.objects.filter(pk=item_pk, worker=worker, state=EvalWorkItem.RUNNING).update(
        heartbeat_at=timezone.now()
    )
    row = EvalWorkItem.objects.filter(pk=item_pk).values_list("state", "worker", "run__stop_requested").first()
    if row is None:  # the run was deleted
        return False
    state, owner, stop_requested = row
    return state == EvalWorkItem.RUNNING and owner == worker and not stop_requested


def complete(*, item_pk: int, worker: str, outcome: CaseOutcome) -> bool:
    """Store the case's result and mark the item done, in one transaction; False
    (nothing stored) when the item was cancelled or another worker holds it."""
    with transaction.atomic():
        item = EvalWorkItem.objects.select_for_update().filter(pk=item_pk).first()
        if item is None or not _still_ours(item, worker):
            return False
        EvalWorkItem.objects.filter(pk=item_pk).update(
            state=EvalWorkItem.DONE, worker=worker, heartbeat_at=timezone.now(), updated_at=timezone.now()
        )
        # None when an earlier attempt stored it: the unique (run, eval_id, repeat) keeps one.
        progress.eval_case_result_store(run_pk=item.run_id, outcome=outcome)
        progress.eval_run_refresh(run_pk=item.run_id)
    return True


def _still_ours(item: EvalWorkItem, worker: str) -> bool:
    # Re-queued after a stall and not yet taken again: finishing it is finishing it.
    return (item.state == EvalWorkItem.RUNNING and item.worker == worker) or item.state == EvalWorkItem.QUEUED


def release_cancelled(*, item_pk: int, worker: str) -> None:
    """The worker stopped the case because its run was cancelled."""
    with transaction.atomic():
        released = EvalWorkItem.objects.filter(pk=item_pk, worker=worker, state=EvalWorkItem.RUNNING).update(
            state=EvalWorkItem.CANCELLED, updated_at=timezone.now()
        )
        run_pk = EvalWorkItem.objects.filter(pk=item_pk).values_list("run_id", flat=True).first()
        if released and run_pk:
            progress.eval_run_refresh(run_pk=run_pk)


def requeue_fault(*, item_pk: int, worker: str, error: str) -> bool:
    """Queue the item again after an infrastructure fault, the fault kept; False if it is no longer ours."""
    with transaction.atomic():
        requeued = EvalWorkItem.objects.filter(pk=item_pk, worker=worker, state=EvalWorkItem.RUNNING).update(
            state=EvalWorkItem.QUEUED, worker="", last_error=error, task_id="", updated_at=timezone.now()
        )
        if requeued:
            run_pk = EvalWorkItem.objects.values_list("run_id", flat=True).get(pk=item_pk)
            progress.eval_run_refresh(run_pk=run_pk)
    return bool(requeued)


def give_up(*, item: EvalWorkItem, worker: str, error: str) -> bool:
    """After the last attempt: store the case as an `error` result naming the
    fault (not the agent's error), and note it on the run, which ends failed."""
    outcome = CaseOutcome(
        case_pk=item.case_id, eval_id=item.eval_id, repeat=item.repeat, position=item.position,
        status="error", case_data=item.case.data if item.case else {}, app_name=item.run.app_name,
        error=f"Not evaluated: an infrastructure fault persisted through {item.attempts} attempts. {error}",
    )
    with transaction.atomic():
        EvalWorkItem.objects.filter(pk=item.pk).update(last_error=error)
        EvalRun.objects.filter(pk=item.run_id, error="").update(
            error=f"Case {item.eval_id!r} (repeat {item.repeat}) could not be evaluated: {error}"
        )
        return complete(item_pk=item.pk, worker=worker, outcome=outcome)


# ---- the reaper ---------------------------------------------------------------


def requeue_stale(*, tasks_in_database: bool = False) -> list[int]:
    """Queue again the running items whose heartbeat is older than the lease
    (their worker died), or cancel them when their run was cancelled; returns
    the pks queued, for `tasks` to hand to workers. With `tasks_in_database`,
    the dead worker's task (django-tasks-db leaves it RUNNING forever) is marked failed."""
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    stale = list(
        EvalWorkItem.objects.filter(state=EvalWorkItem.RUNNING, heartbeat_at__lt=cutoff)
        .values_list("pk", "run_id", "worker", "run__stop_requested", "task_id")
    )
    queued = []
    for pk, run_pk, worker, stop_requested, task_id in stale:
        with transaction.atomic():
            state = EvalWorkItem.CANCELLED if stop_requested else EvalWorkItem.QUEUED
            moved = EvalWorkItem.objects.filter(pk=pk, state=EvalWorkItem.RUNNING, heartbeat_at__lt=cutoff).update(
                state=state, worker="", task_id="", updated_at=timezone.now(),
                last_error=f"Worker {worker} stopped beating (lease {lease_seconds():g}s); queued again.",
            )
            if moved:
                progress.eval_run_refresh(run_pk=run_pk)
                if tasks_in_database and task_id:
                    _task_lost(task_id, worker)
        if moved and state == EvalWorkItem.QUEUED:
            queued.append(pk)
    return queued


def _task_lost(task_id: str, worker: str) -> None:
    DBTaskResult.objects.filter(id=task_id, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.FAILED, finished_at=timezone.now(), exception_class_path="eval_app.work.WorkerLost",
        traceback=f"Worker {worker} stopped beating the case's heart (lease {lease_seconds():g}s); queued again.",
    )


def queued_without_task(*, check_tasks: bool) -> list[int]:
    """Queued items no pending task will run: never handed over (the hand-over
    failed, or a run was created not started and left), or (`check_tasks`: the
    tasks are django-tasks-db's rows) whose task ended without taking them.
    Only items queued longer than the lease."""
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    rows = list(
        EvalWorkItem.objects.filter(state=EvalWorkItem.QUEUED, updated_at__lt=cutoff, run__stop_requested=False)
        .values_list("pk", "task_id")
    )
    if not check_tasks:
        return [pk for pk, task_id in rows if not task_id]
    with_task = [task_id for _, task_id in rows if task_id]
    pending = {
        str(pk) for pk in DBTaskResult.objects.filter(
            id__in=with_task, status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING]
        ).values_list("id", flat=True)
    } if with_task else set()
    return [pk for pk, task_id in rows if not task_id or task_id not in pending]


def runs_without_items() -> int:
    """Runs left active from before work items (an older adkui): interrupted, so they can resume."""
    with transaction.atomic():
        pks = list(EvalRun.objects.filter(status__in=EvalRun.ACTIVE, work_items__isnull=True).values_list("pk", flat=True))
        for pk in pks:
            EvalRun.objects.filter(pk=pk).update(status=EvalRun.INTERRUPTED, finished_at=timezone.now())
            progress.eval_run_changed(run_pk=pk)
    return len(pks)


def has_unfinished(run_pk: int) -> bool:
    return EvalWorkItem.objects.filter(
        run_id=run_pk, state__in=[EvalWorkItem.QUEUED, EvalWorkItem.RUNNING]
    ).exists()
