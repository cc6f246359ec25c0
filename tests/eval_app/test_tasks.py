"""Eval runs as django-tasks (ImmediateBackend in tests: a task runs where it is
enqueued): work items, leases, the reaper, fault retries, cancel and resume."""
from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, close_old_connections, connections
from django.utils import timezone

from eval_app import broadcast, engine, metrics, progress, services, tasks, work
from eval_app.models import EvalCaseResult, EvalRun, EvalWorkItem
from tests.conftest import wait_until

from .conftest import AGENT

CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


def create_run(eval_set, **kwargs) -> EvalRun:
    kwargs.setdefault("metrics", metrics.eval_metrics(CRITERIA))
    return services.eval_run_create(eval_set=eval_set, app_name=AGENT, **kwargs)


def states(run: EvalRun) -> list[str]:
    return sorted(run.work_items.values_list("state", flat=True))


def fresh(run: EvalRun) -> EvalRun:
    return EvalRun.objects.get(pk=run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_started_run_runs_one_task_per_case_and_repeat_and_completes(demo_set):
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], repeats=2)
    run = fresh(run)
    assert run.status == EvalRun.COMPLETED
    assert (run.total, run.done, run.passed) == (4, 4, 4)
    assert run.started_at and run.finished_at and run.elapsed_seconds >= 0
    assert states(run) == ["done"] * 4
    assert sorted(run.results.values_list("eval_id", "repeat")) == [
        ("greeting", 0), ("greeting", 1), ("weather_oslo", 0), ("weather_oslo", 1)]
    assert set(run.work_items.values_list("attempts", flat=True)) == {1}


@pytest.mark.django_db
def test_a_created_run_is_queued_with_an_item_per_pair_and_items_lease_once(demo_set):
    run = create_run(demo_set, eval_ids=["greeting"], repeats=3, start=False)
    assert fresh(run).status == EvalRun.QUEUED
    assert states(run) == ["queued"] * 3
    item = run.work_items.first()
    leased = work.lease(item_pk=item.pk, worker="w1")
    assert leased.state == "running" and leased.worker == "w1" and leased.attempts == 1
    assert fresh(run).status == EvalRun.RUNNING
    assert work.lease(item_pk=item.pk, worker="w2") is None  # held by a live worker
    EvalWorkItem.objects.filter(pk=item.pk).update(state="done")
    assert work.lease(item_pk=item.pk, worker="w2") is None  # done


@pytest.mark.django_db
def test_a_stale_item_is_queued_again_and_its_run_is_not_left_running(demo_set, settings):
    settings.ADKUI_EVAL_LEASE_SECONDS = 30
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], start=False)
    stale, fresh_item = run.work_items.all()
    work.lease(item_pk=stale.pk, worker="dead")
    work.lease(item_pk=fresh_item.pk, worker="alive")
    EvalWorkItem.objects.filter(pk=stale.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert work.requeue_stale() == [stale.pk]
    stale.refresh_from_db()
    assert (stale.state, stale.worker) == ("queued", "")
    assert "dead stopped beating" in stale.last_error
    assert fresh(run).status == EvalRun.RUNNING  # the live worker still has one
    EvalWorkItem.objects.filter(pk=fresh_item.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    work.requeue_stale()
    assert fresh(run).status == EvalRun.QUEUED  # nobody works on it: waiting, not running


@pytest.mark.django_db(transaction=True)
def test_the_reaper_hands_a_dead_workers_case_to_a_new_task_which_finishes_the_run(demo_set, settings, monkeypatch):
    settings.ADKUI_EVAL_LEASE_SECONDS = 30
    monkeypatch.setattr(tasks, "_last_reap", float("-inf"))  # an earlier test in this process reaped a moment ago
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], start=False)
    dead, other = run.work_items.all()
    work.lease(item_pk=dead.pk, worker="dead")
    EvalWorkItem.objects.filter(pk=dead.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    tasks.run_eval_item.enqueue(other.pk)  # a task start reaps first (ImmediateBackend: runs here)
    run = fresh(run)
    assert run.status == EvalRun.COMPLETED and run.done == 2
    assert run.results.count() == 2
    assert EvalWorkItem.objects.get(pk=dead.pk).attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_database_fault_while_storing_is_retried_not_stored_as_the_agents_error(demo_set, monkeypatch):
    store = progress.eval_case_result_store
    calls = []

    def flaky(**kwargs):
        calls.append(kwargs["outcome"].eval_id)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return store(**kwargs)

    monkeypatch.setattr(progress, "eval_case_result_store", flaky)
    run = fresh(create_run(demo_set, eval_ids=["greeting"]))
    assert run.status == EvalRun.COMPLETED
    result = run.results.get()
    assert result.status == EvalCaseResult.PASSED and not result.error
    item = run.work_items.get()
    assert item.attempts == 2 and "OperationalError: server closed the connection" in item.last_error
    assert calls == ["greeting", "greeting"]


@pytest.mark.django_db(transaction=True)
def test_a_fault_that_persists_is_stored_as_an_error_naming_it_and_the_run_fails(demo_set, settings, monkeypatch):
    settings.ADKUI_EVAL_MAX_ATTEMPTS = 3
    attempts = []

    async def down(run, item):
        attempts.append(item.eval_id)
        raise engine.InfrastructureFault("OperationalError: database is unavailable")

    monkeypatch.setattr(engine, "evaluate_case", down)
    run = fresh(create_run(demo_set, eval_ids=["greeting"]))
    assert attempts == ["greeting"] * 3
    assert run.status == EvalRun.FAILED and "database is unavailable" in run.error
    result = run.results.get()
    assert result.status == EvalCaseResult.ERROR
    assert "infrastructure fault persisted through 3 attempts" in result.error
    assert "database is unavailable" in result.error


@pytest.mark.django_db(transaction=True)
def test_a_failing_broadcast_never_fails_a_case(demo_set, monkeypatch):
    def broken(**kwargs):
        raise ConnectionError("channel layer down")

    monkeypatch.setattr(broadcast, "case_finished", broken)
    monkeypatch.setattr(broadcast, "run_changed", broken)
    run = fresh(create_run(demo_set, eval_ids=["greeting", "weather_oslo"]))
    assert run.status == EvalRun.COMPLETED and run.passed == 2


@pytest.mark.django_db(transaction=True)
def test_a_finished_case_is_never_run_or_stored_twice(demo_set, monkeypatch):
    run = create_run(demo_set, eval_ids=["greeting"])
    item = run.work_items.get()
    assert tasks.execute_item(item.pk) == "skipped"  # a duplicate task of a done item
    # Queued again after a stall although its first worker stored it: run, but stored once.
    EvalWorkItem.objects.filter(pk=item.pk).update(state="queued")
    assert tasks.execute_item(item.pk) == "done"
    run = fresh(run)
    assert run.results.count() == 1 and run.done == 1 and run.status == EvalRun.COMPLETED


def test_execute_inline_runs_every_pending_case_without_a_worker(demo_set, on_commit_callbacks):
    run = create_run(demo_set, repeats=2, start=False)
    run = services.eval_run_execute_inline(run)
    assert run.status == EvalRun.COMPLETED
    assert run.done == run.total == 10
    assert states(run) == ["done"] * 10


# ---- cancel and resume, through the API --------------------------------------------


def _post(client, run_pk: int, action: str):
    return client.post(f"/api/evals/runs/{run_pk}/{action}", content_type="application/json")


@pytest.mark.django_db(transaction=True)
def test_cancel_and_resume_through_the_api(client, demo_set):
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], start=False)
    assert _post(client, run.pk, "resume").status_code == 409  # queued: nothing to resume
    response = _post(client, run.pk, "cancel")
    assert response.status_code == 200
    assert response.json()["status"] == "stopped"
    assert states(run) == ["cancelled", "cancelled"]
    again = _post(client, run.pk, "cancel")
    assert again.status_code == 409 and "only a queued or running run" in again.json()["detail"]
    response = _post(client, run.pk, "resume")  # hands the cases to tasks on commit: they run here
    assert response.status_code == 200
    run = fresh(run)
    assert run.status == EvalRun.COMPLETED and run.done == 2
    assert _post(client, run.pk, "resume").status_code == 409
    assert _post(client, 999999, "cancel").status_code == 404
    assert _post(client, 999999, "resume").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_resume_runs_only_the_cases_not_finished(demo_set):
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], start=False)
    first, second = run.work_items.all()
    assert tasks.execute_item(first.pk) == "done"
    services.eval_run_stop(run=run)
    assert fresh(run).status == EvalRun.STOPPED
    services.eval_run_resume(run=run)
    run = fresh(run)
    assert run.status == EvalRun.COMPLETED
    assert sorted(run.results.values_list("eval_id", flat=True)) == ["greeting", "weather_oslo"]
    assert EvalWorkItem.objects.get(pk=first.pk).attempts == 1


@pytest.mark.django_db(transaction=True)
def test_a_running_case_stops_at_its_next_heartbeat_when_the_run_is_cancelled(demo_set, settings, monkeypatch):
    settings.ADKUI_EVAL_LEASE_SECONDS = 0.6  # beats every 0.1 s
    started, cancelled = threading.Event(), threading.Event()

    async def endless(run, item):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    monkeypatch.setattr(engine, "evaluate_case", endless)
    run = create_run(demo_set, eval_ids=["greeting", "weather_oslo"], start=False)
    first = run.work_items.first()
    outcome = []

    def worker():
        try:
            outcome.append(tasks.execute_item(first.pk))
        finally:
            close_old_connections()
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert started.wait(30)
        assert fresh(run).status == EvalRun.RUNNING
        services.eval_run_stop(run=run)  # the queued case is cancelled now, the running one at its next beat
    finally:
        thread.join(30)
    assert outcome == ["cancelled"] and cancelled.is_set()
    run = fresh(run)
    assert run.status == EvalRun.STOPPED and run.done == 0
    assert states(run) == ["cancelled", "cancelled"]
    wait_until(lambda: not thread.is_alive())
