"""Eval runs through ADK's Runner on our session service: results, sessions, crash safety, stop."""
from __future__ import annotations

import asyncio
import os
import socket
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from eval_app import engine, metrics, progress, services, worker
from eval_app.evalset_files import default_specs, parse_eval_set_file
from eval_app.metrics import MetricSpec
from eval_app.models import EvalCaseResult, EvalInvocationResult, EvalRun
from sessions_app.models import Session, StateChange

from .conftest import AGENT, DEMO_FILE

# The engine stores results from asgiref's worker thread, on its own connection: only commits are seen there.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("async_db_threads")]
WORKER = "test-worker"


@sync_to_async
def import_demo():
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    return services.eval_set_import(parsed=parsed, app_name=AGENT)


@sync_to_async
def create_run(eval_set, **kwargs):
    kwargs.setdefault("specs", default_specs())
    return services.eval_run_create(eval_set=eval_set, app_name=AGENT, start=False, **kwargs)


@sync_to_async
def reload(run):
    return EvalRun.objects.get(pk=run.pk)


@sync_to_async
def results_of(run):
    return list(EvalCaseResult.objects.filter(run=run).order_by("repeat", "position"))


async def test_the_demo_set_passes_with_each_case_in_its_own_session():
    eval_set = await import_demo()
    run = await create_run(eval_set)
    await engine.execute_run(run.pk, worker=WORKER)

    run = await reload(run)
    assert (run.status, run.done, run.total, run.passed, run.failed) == ("completed", 5, 5, 5, 0)
    results = await results_of(run)
    assert [r.status for r in results] == ["passed"] * 5
    assert run.agent_seconds > 0 and run.elapsed_seconds >= run.agent_seconds
    # Each case ran in a stored session, visible in the session browser, linked from its result.
    sessions = {r.session_id for r in results}
    assert None not in sessions and len(sessions) == 5
    ada = await Session.objects.aget(pk=next(r.session_id for r in results if r.eval_id == "plan_then_weather"))
    assert ada.user_id == "ada"  # the case's session_input user, not a hard-coded one
    initial = {c.key: c.new_value async for c in StateChange.objects.filter(session=ada, seq=0)}
    assert initial == {"name": "Ada", "trip_budget": 1200}
    other = next(r for r in results if r.eval_id == "greeting")
    assert other.user_id == f"eval-{run.pk}"


async def test_per_invocation_results_hold_actual_calls_response_and_each_metric():
    eval_set = await import_demo()
    run = await create_run(eval_set, eval_ids=["plan_then_weather"])
    await engine.execute_run(run.pk, worker=WORKER)
    rows = [r async for r in EvalInvocationResult.objects.filter(case_result__run=run).order_by("index")]
    assert [r.user_text for r in rows] == ["Plan a trip to Kyoto", "What is the weather in Kyoto?"]
    assert rows[0].actual_tool_calls == [{"name": "plan_trip", "args": {"city": "Kyoto"}}]
    assert rows[1].actual_response == "The weather in Kyoto is rain, 12°C."
    assert [(m["metric_name"], m["score"], m["status"]) for m in rows[1].metrics] == [
        (metrics.TRAJECTORY, 1.0, "PASSED"), (metrics.RESPONSE_MATCH, 1.0, "PASSED"),
    ]


async def test_a_changed_expectation_fails_its_metric_and_the_case_but_not_the_other_metric():
    eval_set = await import_demo()

    @sync_to_async
    def break_expected_args():
        case = eval_set.cases.get(eval_id="plan_lisbon")
        case.data["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"] = {"city": "Porto"}
        case.save()

    await break_expected_args()
    run = await create_run(eval_set, eval_ids=["plan_lisbon"])
    await engine.execute_run(run.pk, worker=WORKER)
    [result] = await results_of(run)
    assert result.status == "failed"
    assert [(m["metric_name"], m["status"]) for m in result.metrics] == [
        (metrics.TRAJECTORY, "FAILED"), (metrics.RESPONSE_MATCH, "PASSED"),
    ]
    # ignore_args compares names only: the same run passes.
    run = await create_run(eval_set, eval_ids=["plan_lisbon"], specs=[MetricSpec(metrics.TRAJECTORY, 1.0, "EXACT", True)])
    await engine.execute_run(run.pk, worker=WORKER)
    [result] = await results_of(run)
    assert result.status == "passed"


async def test_repeats_and_concurrency_run_every_pair_once():
    eval_set = await import_demo()
    run = await create_run(eval_set, repeats=2, concurrency=3)
    await engine.execute_run(run.pk, worker=WORKER)
    run = await reload(run)
    results = await results_of(run)
    assert (run.status, run.done, run.passed) == ("completed", 10, 10)
    assert sorted((r.eval_id, r.repeat) for r in results) == sorted((i, k) for i in run.eval_ids for k in (0, 1))


async def test_a_case_adkui_cannot_run_is_stored_as_an_error_result():
    eval_set = await import_demo()

    @sync_to_async
    def make_scenario_case():
        case = eval_set.cases.get(eval_id="greeting")
        case.data = {"eval_id": "greeting", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "x"}}
        case.save()

    await make_scenario_case()
    run = await create_run(eval_set, eval_ids=["greeting", "plan_lisbon"])
    await engine.execute_run(run.pk, worker=WORKER)
    results = await results_of(run)
    assert [r.status for r in results] == ["error", "passed"]
    assert "conversation_scenario" in results[0].error
    assert (await reload(run)).failed == 1


async def test_an_interrupted_run_resumes_without_rerunning_or_duplicating(monkeypatch):
    eval_set = await import_demo()
    run = await create_run(eval_set)
    finished_two = asyncio.Event()
    loop = asyncio.get_running_loop()
    real_store = progress.eval_case_result_store

    def store_then_maybe_signal(**kwargs):  # runs in a worker thread
        result = real_store(**kwargs)
        if EvalCaseResult.objects.filter(run_id=kwargs["run_pk"]).count() >= 2:
            loop.call_soon_threadsafe(finished_two.set)
        return result

    monkeypatch.setattr(progress, "eval_case_result_store", store_then_maybe_signal)
    # The "server" dies after two cases: its task is killed mid-run, nothing is finished.
    task = asyncio.create_task(engine.execute_run(run.pk, worker="dead-worker"))
    await asyncio.wait_for(finished_two.wait(), 30)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    monkeypatch.setattr(progress, "eval_case_result_store", real_store)
    before = {r.eval_id: r.pk for r in await results_of(run)}
    assert (await reload(run)).status == "running" and 2 <= len(before) < 5

    # No worker owns it once its heartbeat is stale: the reaper marks it interrupted.
    await EvalRun.objects.filter(pk=run.pk).aupdate(heartbeat_at=timezone.now() - timedelta(minutes=1))
    assert await sync_to_async(progress.eval_runs_mark_interrupted)() == 1
    run = await reload(run)
    assert run.status == "interrupted" and run.can_resume

    await sync_to_async(services.eval_run_resume)(run=run, start=False)
    await engine.execute_run(run.pk, worker=WORKER)
    run = await reload(run)
    after = await results_of(run)
    assert (run.status, run.done, run.passed) == ("completed", 5, 5)
    assert len(after) == 5
    assert {r.eval_id: r.pk for r in after if r.eval_id in before} == before  # finished cases were not re-run


async def test_a_stored_result_is_never_stored_twice():
    eval_set = await import_demo()
    run = await create_run(eval_set, eval_ids=["greeting"])
    await engine.execute_run(run.pk, worker=WORKER)
    [result] = await results_of(run)
    duplicate = progress.CaseOutcome(case_pk=None, eval_id="greeting", repeat=0, position=0, status="failed", case_data={})
    assert await sync_to_async(progress.eval_case_result_store)(run_pk=run.pk, outcome=duplicate) is None
    run = await reload(run)
    assert (run.done, run.passed, run.failed) == (1, 1, 0)


async def test_the_stop_button_cancels_the_cases_still_running(monkeypatch):
    eval_set = await import_demo()
    run = await create_run(eval_set, concurrency=1)
    monkeypatch.setattr(engine, "HEARTBEAT_EVERY", 0.05)
    real_run_case = engine.run_case
    calls, second_started = 0, asyncio.Event()

    async def first_runs_then_hang(*args, **kwargs):
        # One case at a time: when the second starts, the first is stored.
        nonlocal calls
        calls += 1
        if calls == 1:
            return await real_run_case(*args, **kwargs)
        second_started.set()
        await asyncio.Event().wait()  # until the stop cancels it

    monkeypatch.setattr(engine, "run_case", first_runs_then_hang)
    task = asyncio.create_task(engine.execute_run(run.pk, worker=WORKER))
    await asyncio.wait_for(second_started.wait(), 30)
    await sync_to_async(services.eval_run_stop)(run=await reload(run))
    await asyncio.wait_for(task, 10)
    run = await reload(run)
    assert (run.status, run.done) == ("stopped", 1)
    assert run.can_resume


async def test_a_queued_run_stops_at_once_and_an_unknown_agent_fails_the_run():
    eval_set = await import_demo()
    run = await create_run(eval_set)
    await sync_to_async(services.eval_run_stop)(run=run)
    assert (await reload(run)).status == "stopped"

    broken = await sync_to_async(services.eval_run_create)(
        eval_set=eval_set, app_name="no_such_agent", specs=default_specs(), start=False
    )
    await engine.execute_run(broken.pk, worker=WORKER)
    broken = await reload(broken)
    assert broken.status == "failed" and "no_such_agent" in broken.error


async def test_a_restart_on_this_machine_is_noticed_without_waiting_for_the_heartbeat():
    eval_set = await import_demo()
    host = socket.gethostname()
    owners = {
        "exited": f"{host}:{2 ** 22 + 7}:old",  # no such process
        "restarted": f"{host}:{os.getpid()}:previous-boot",  # our pid, an earlier incarnation
        "elsewhere": "another-host:1:abc",  # unknown: trust its fresh heartbeat
        "ours": worker.WORKER_ID,  # this process, and running here
    }
    runs = {}
    for name, owner in owners.items():
        run = await create_run(eval_set)
        await EvalRun.objects.filter(pk=run.pk).aupdate(status="running", worker=owner, heartbeat_at=timezone.now())
        runs[name] = run.pk
    worker._alive.add(runs["ours"])
    try:
        assert await sync_to_async(worker.reap)() == 2
    finally:
        worker._alive.discard(runs["ours"])
    statuses = {name: (await EvalRun.objects.aget(pk=pk)).status for name, pk in runs.items()}
    assert statuses == {"exited": "interrupted", "restarted": "interrupted", "elsewhere": "running", "ours": "running"}
