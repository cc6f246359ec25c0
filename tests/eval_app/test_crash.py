"""Real `manage.py db_worker` processes run eval runs, and a worker killed with
SIGKILL mid-case loses nothing: its case is queued again once its heartbeat is
older than the lease (shortened here) and another worker runs it, once."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from eval_app import metrics, services
from eval_app.models import EvalRun, EvalWorkItem
from tests.conftest import wait_until
from tests.workers import database_url_for_children

from .conftest import AGENT

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2  # seconds, for the test process and its workers
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# A worker whose cases never finish (it still beats their heart): the one to kill.
STUCK_WORKER = """
import asyncio, sys
import django
django.setup()
from django.core.management import call_command
from eval_app import engine

async def stuck(run, item):
    await asyncio.Event().wait()

engine.evaluate_case = stuck
call_command("db_worker", *sys.argv[1:])
"""
WORKER_ARGS = ["--no-reload", "--no-startup-delay", "--interval", "0.1", "--verbosity", "0"]


@pytest.fixture
def database_tasks(settings) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.ADKUI_EVAL_LEASE_SECONDS = LEASE


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def start_worker(workers: list[subprocess.Popen], *, stuck: bool = False) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "DJANGO_SETTINGS_MODULE": "adkui.settings",
           "ADKUI_TASKS_BACKEND": "django_tasks_db.DatabaseBackend", "ADKUI_EVAL_LEASE_SECONDS": str(LEASE)}
    if stuck:
        command = [sys.executable, "-c", STUCK_WORKER, *WORKER_ARGS]
    else:
        command = [sys.executable, "manage.py", "db_worker", *WORKER_ARGS]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    workers.append(process)
    return process


def create_run(demo_set, repeats: int) -> EvalRun:
    return services.eval_run_create(
        eval_set=demo_set, app_name=AGENT, repeats=repeats,
        metrics=metrics.eval_metrics({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}),
    )


def finished(run: EvalRun) -> EvalRun | None:
    run = EvalRun.objects.get(pk=run.pk)
    return run if run.status not in EvalRun.ACTIVE else None


def alive(process: subprocess.Popen) -> bool:
    assert process.poll() is None, f"worker {process.pid} exited with {process.returncode}"
    return True


def test_a_db_worker_process_runs_a_run_case_by_case(demo_set, database_tasks, workers):
    run = create_run(demo_set, repeats=1)
    assert EvalRun.objects.get(pk=run.pk).status == EvalRun.QUEUED  # nothing runs without a worker
    worker = start_worker(workers)
    run = wait_until(lambda: alive(worker) and finished(run), timeout=180, interval=0.2)
    assert run.status == EvalRun.COMPLETED
    assert (run.total, run.done, run.passed) == (5, 5, 5)
    items = list(run.work_items.all())
    assert {i.state for i in items} == {"done"} and {i.attempts for i in items} == {1}
    assert {i.worker.split(":")[1] for i in items} == {str(worker.pid)}
    # The worker marks a task successful after its function returned, so after the run finished.
    tasks_run = DBTaskResult.objects.filter(id__in=[i.task_id for i in items])
    wait_until(lambda: set(tasks_run.values_list("status", flat=True)) == {TaskResultStatus.SUCCESSFUL},
               timeout=30, interval=0.1, message="the worker did not mark its tasks successful")


def test_a_killed_workers_case_is_run_by_another_worker_once(demo_set, database_tasks, workers):
    run = create_run(demo_set, repeats=1)
    doomed = start_worker(workers, stuck=True)
    held = wait_until(
        lambda: alive(doomed) and EvalWorkItem.objects.filter(
            run=run, state="running", worker__contains=f":{doomed.pid}:").first(),
        timeout=120, interval=0.1, message="the doomed worker never took a case")
    held_task = held.task_id
    survivor = start_worker(workers)
    wait_until(lambda: alive(survivor) and run.work_items.filter(state="done").exists(), timeout=120, interval=0.1)
    assert EvalWorkItem.objects.get(pk=held.pk).state == "running"  # still beating
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(30)

    run = wait_until(lambda: alive(survivor) and finished(run), timeout=180, interval=0.2,
                     message="the run did not finish after its worker was killed")
    assert run.status == EvalRun.COMPLETED
    assert (run.done, run.passed) == (5, 5)
    pairs = list(run.results.values_list("eval_id", "repeat"))
    assert len(pairs) == len(set(pairs)) == 5
    held.refresh_from_db()
    assert held.state == "done" and held.attempts == 2
    assert f":{doomed.pid}:" in held.last_error and "stopped beating" in held.last_error
    assert held.worker.split(":")[1] == str(survivor.pid)
    assert set(run.work_items.values_list("state", flat=True)) == {"done"}
    # django-tasks-db left the dead worker's task RUNNING; the reaper marked it failed.
    lost = DBTaskResult.objects.get(id=held_task)
    assert lost.status == TaskResultStatus.FAILED and lost.exception_class_path == "eval_app.work.WorkerLost"


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_manage_py_up_runs_a_worker_beside_the_server_and_stops_it_with_the_server(demo_set, database_tasks, workers):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "DEBUG": "1", "ADKUI_LOCAL_DEV": "1",
           "ADKUI_TASKS_BACKEND": "django_tasks_db.DatabaseBackend"}
    up = subprocess.Popen([sys.executable, "manage.py", "up", str(port), "--no-demo"], cwd=ROOT, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers.append(up)
    worker_pid = wait_until(lambda: alive(up) and children(up.pid), timeout=120, interval=0.1)[0]
    run = create_run(demo_set, repeats=1)
    run = wait_until(lambda: alive(up) and finished(run), timeout=180, interval=0.2)
    assert run.status == EvalRun.COMPLETED and run.done == 5
    assert {i.split(":")[1] for i in run.work_items.values_list("worker", flat=True)} == {str(worker_pid)}
    up.terminate()
    up.wait(60)
    assert not Path(f"/proc/{worker_pid}").exists()  # stopped, and reaped, by `up`
