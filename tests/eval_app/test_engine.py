"""One case through ADK's LocalEvalService on our services: the same scores as ADK on its
in-memory services, the state metric, the sandbox, storage, agent errors and infrastructure faults."""
from __future__ import annotations

import copy
import json
import sqlite3
import time

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from google.adk.agents import BaseAgent
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import SessionInput
from google.adk.evaluation.eval_metrics import EvalMetricResult
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from redis.exceptions import ConnectionError as RedisConnectionError

from eval_app import engine, judges, metrics, progress, state_metric
from eval_app.models import EvalCase, EvalCaseResult, EvalRun, EvalSet
from eval_app.selectors import WorkItem
from memory_app.artifact_service import DjangoArtifactService
from memory_app.memory_service import DjangoMemoryService
from runtime_app.agents import load
from sessions_app.models import Session
from sessions_app.session_service import DjangoSessionService

from .conftest import AGENT, DEMO_FILE

# The engine reaches the database from asgiref's worker thread: only committed rows are seen there.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("async_db_threads")]

# Never the same twice: wall-clock time, and the scripted model's token estimate (characters / 4 of
# prompts that carry ADK's generated ids), which differs by a token now and then between two runs.
NOT_COMPARABLE = {"invocation_duration_v1", "token_usage_v1"}


def sandbox_of(run: EvalRun, position: int = 0, repeat: int = 0) -> str:
    """Each case (each repeat) runs in a sandbox of its own, named like its pinned session."""
    return f"trip_planner@eval-{run.pk}-{position}-{repeat}"


def demo_cases() -> dict[str, dict]:
    data = json.loads(DEMO_FILE.read_text())
    return {case["eval_id"]: case for case in data["eval_cases"]}


def turn(case: dict, index: int) -> dict:
    return case["conversation"][index]


def edited_cases() -> dict[str, dict]:
    """Demo cases whose expectations the agent meets under some match types only."""
    cases = copy.deepcopy(demo_cases())
    lisbon = turn(cases["plan_lisbon"], 0)
    lisbon["intermediate_data"]["tool_uses"][0]["args"] = {"city": "Porto"}  # args differ
    lisbon["final_response"]["parts"][0]["text"] = "Done! Your Lisbon trip is planned."
    oslo = turn(cases["weather_oslo"], 0)["intermediate_data"]
    oslo["tool_uses"] = list(reversed(oslo["tool_uses"]))  # the order differs
    kyoto = turn(cases["plan_then_weather"], 1)["intermediate_data"]
    kyoto["tool_uses"] = [kyoto["tool_uses"][-1]]  # the transfer is an extra actual call
    return {k: cases[k] for k in ("plan_lisbon", "weather_oslo", "plan_then_weather")}


@sync_to_async
def make_run(criteria: dict, *, judge_model: str = "", cases: dict[str, dict] | None = None):
    """A run of the demo agent over `cases` (eval_id -> ADK EvalCase JSON), and its work items."""
    cases = cases if cases is not None else demo_cases()
    eval_set, _ = EvalSet.objects.get_or_create(app_name=AGENT, eval_set_id="engine_tests")
    stored = [
        EvalCase.objects.update_or_create(eval_set=eval_set, eval_id=eval_id,
                                          defaults={"position": i, "data": data})[0]
        for i, (eval_id, data) in enumerate(cases.items())
    ]
    run = EvalRun.objects.create(
        eval_set=eval_set, app_name=AGENT, judge_model=judge_model, eval_ids=list(cases), total=len(cases),
        metrics=[m.model_dump(mode="json") for m in metrics.eval_metrics(criteria, judge_model=judge_model)],
    )
    return run, [WorkItem(c.pk, c.eval_id, c.position, 0, c.data) for c in stored]


async def adk_reference(run: EvalRun, case_data: dict, session_id: str) -> tuple[AdkEvalCaseResult, list[dict]]:
    """What ADK's own LocalEvalService answers for the case, the agent on ADK's in-memory services,
    with the same metrics (the state metric bound to the in-memory session's state)."""
    case = AdkEvalCase.model_validate(case_data)
    # The same app, user and session ids as our run's (they reach the prompt, hence token_usage_v1).
    given = case.session_input
    case.session_input = SessionInput(
        app_name=f"trip_planner@{session_id}", user_id=given.user_id if given else "test_user_id",
        state=given.state if given else {}, session_id=session_id,
    )
    sets, sessions = InMemoryEvalSetsManager(), InMemorySessionService()
    sets.create_eval_set(app_name=AGENT, eval_set_id="reference")
    sets.add_eval_case(app_name=AGENT, eval_set_id="reference", eval_case=case)
    judge = run.judge_model or judges.default_judge_model()

    def service(registry=DEFAULT_METRIC_EVALUATOR_REGISTRY):
        return LocalEvalService(
            root_agent=load(AGENT).root, eval_sets_manager=sets, session_service=sessions,
            metric_evaluator_registry=registry,
            user_simulator_provider=judges.user_simulator_provider(run.user_simulator_config, judge),
        )

    request = InferenceRequest(app_name=AGENT, eval_set_id="reference", inference_config=InferenceConfig())
    [inference] = [r async for r in service().perform_inference(inference_request=request)]
    session = await sessions.get_session(app_name=case.session_input.app_name, user_id=case.session_input.user_id,
                                         session_id=inference.session_id)
    samples: list[dict] = []
    registry = judges.recording_registry(
        state_metric.registry_for_case(DEFAULT_METRIC_EVALUATOR_REGISTRY, expected=case.final_session_state,
                                       actual=session.state), samples)
    config = EvaluateConfig(eval_metrics=metrics.run_metrics(run.metrics, judge_model=judge))
    evaluate = EvaluateRequest(inference_results=[inference], evaluate_config=config)
    [result] = [r async for r in service(registry).evaluate(evaluate_request=evaluate)]
    return result, samples


def comparable(metric_dicts: list[dict]) -> dict[str, tuple]:
    return {
        m["metric_name"]: (m["score"], m["eval_status"], (m.get("details") or {}).get("rubric_scores"))
        for m in metric_dicts if m["metric_name"] not in NOT_COMPARABLE
    }


def adk_view(result: AdkEvalCaseResult) -> tuple[dict, list[dict]]:
    overall = comparable([m.model_dump(mode="json") for m in result.overall_eval_metric_results])
    per_invocation = [comparable([m.model_dump(mode="json") for m in row.eval_metric_results])
                      for row in result.eval_metric_result_per_invocation]
    return overall, per_invocation


def our_view(outcome: progress.CaseOutcome) -> tuple[dict, list[dict]]:
    return comparable(outcome.metrics), [comparable(i.metrics) for i in outcome.invocations]


async def assert_same_as_adk(run: EvalRun, item: WorkItem) -> progress.CaseOutcome:
    outcome = await engine.evaluate_case(run, item)
    reference, _ = await adk_reference(run, item.data, outcome.session_id)
    assert outcome.error == ""
    assert our_view(outcome) == adk_view(reference), item.eval_id
    assert outcome.status == {1: "passed", 2: "failed", 3: "not_evaluated"}[reference.final_eval_status.value]
    return outcome


# Trajectory scores of the edited cases: each passes under some options and fails under others.
TRAJECTORY_SCORES = {
    ("EXACT", False): {"plan_lisbon": 0.0, "weather_oslo": 0.0, "plan_then_weather": 0.5},
    ("EXACT", True): {"plan_lisbon": 1.0, "weather_oslo": 0.0, "plan_then_weather": 0.5},
    ("IN_ORDER", False): {"plan_lisbon": 0.0, "weather_oslo": 0.0, "plan_then_weather": 1.0},
    ("ANY_ORDER", True): {"plan_lisbon": 1.0, "weather_oslo": 1.0, "plan_then_weather": 1.0},
}


async def test_trajectory_and_response_scores_equal_adks_under_every_match_type():
    for (match_type, ignore_args), expected in TRAJECTORY_SCORES.items():
        criteria = {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": match_type, "ignore_args": ignore_args},
            "response_match_score": 0.8,
        }
        run, items = await make_run(criteria, cases=edited_cases())
        scores = {}
        for item in items:
            outcome = await assert_same_as_adk(run, item)
            scores[item.eval_id] = next(m["score"] for m in outcome.metrics if m["metric_name"] == metrics.TRAJECTORY)
        assert scores == expected, (match_type, ignore_args)


async def test_the_demo_set_passes_and_records_the_informational_metrics():
    run, items = await make_run(metrics.default_criteria())
    for item in items:
        outcome = await assert_same_as_adk(run, item)
        assert outcome.status == "passed"
        names = [m["metric_name"] for m in outcome.metrics]
        assert names == [metrics.TRAJECTORY, metrics.RESPONSE_MATCH, *metrics.INFORMATIONAL]
        assert all(metrics.status_name(m["eval_status"]) == "INFORMATIONAL" and m["score"] is not None
                   for m in outcome.metrics[2:])
        assert outcome.agent_seconds > 0 and outcome.seconds >= outcome.agent_seconds


async def test_final_response_match_v2_with_the_scripted_judge_equals_adks():
    cases = copy.deepcopy(demo_cases())
    turn(cases["plan_lisbon"], 0)["final_response"]["parts"][0]["text"] = "Your hotel in Porto is booked."
    cases = {k: cases[k] for k in ("greeting", "plan_lisbon")}
    criteria = {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 2}}}
    run, items = await make_run(criteria, judge_model=judges.SCRIPTED_JUDGE, cases=cases)
    statuses = []
    for item in items:
        outcome = await assert_same_as_adk(run, item)
        _, reference_samples = await adk_reference(run, item.data, outcome.session_id)
        statuses.append(outcome.status)
        # Every judge call is recorded, num_samples per invocation, as ADK's own run records them.
        assert [(s["metric_name"], s["invocation_index"], s["sample"]) for s in outcome.judge_samples] == [
            ("final_response_match_v2", 0, 0), ("final_response_match_v2", 0, 1)]
        assert [s["verdicts"] for s in outcome.judge_samples] == [s["verdicts"] for s in reference_samples]
    assert statuses == ["passed", "failed"]


async def test_the_state_metric_passes_and_fails_on_session_app_and_user_keys():
    right = {"destination": "Kyoto", "app:popular_city": "Kyoto", "user:name": "Ada", "user:trips_planned": 1,
             "user:last_destination": "Kyoto", "trip_budget": 1200}
    wrong = {**right, "app:popular_city": "Lisbon", "user:name": "Bob"}
    for expected, score, status in [(right, 1.0, "passed"), (wrong, 4 / 6, "failed")]:
        case = copy.deepcopy(demo_cases()["plan_then_weather"])
        case["final_session_state"] = expected
        run, [item] = await make_run({"final_session_state_match": 1.0}, cases={"plan_then_weather": case})
        outcome = await assert_same_as_adk(run, item)
        [state] = [m for m in outcome.metrics if m["metric_name"] == metrics.FINAL_SESSION_STATE]
        assert (state["score"], outcome.status) == (score, status)
        keys = {r["rubric_id"]: r for r in state["details"]["rubric_scores"]}
        assert set(keys) == set(expected)
        if status == "failed":
            assert keys["app:popular_city"]["rationale"] == 'expected "Lisbon" / actual "Kyoto"'
            assert keys["user:name"] == {"rubric_id": "user:name", "score": 0.0,
                                         "rationale": 'expected "Bob" / actual "Ada"'}


async def test_a_case_without_a_final_state_leaves_the_state_metric_not_evaluated():
    run, [item] = await make_run({"final_session_state_match": 1.0, "response_match_score": 0.8},
                                 cases={"greeting": demo_cases()["greeting"]})
    outcome = await engine.evaluate_case(run, item)
    [state] = [m for m in outcome.metrics if m["metric_name"] == metrics.FINAL_SESSION_STATE]
    assert (metrics.status_name(state["eval_status"]), outcome.status) == ("NOT_EVALUATED", "passed")


@sync_to_async
def developer_view(service: DjangoSessionService) -> tuple:
    sessions = service.list_sessions_sync(app_name=AGENT, user_id="ada").sessions
    [mine] = sessions
    state = service.get_session_sync(app_name=AGENT, user_id="ada", session_id=mine.id).state
    return sorted(s.id for s in service.list_sessions_sync(app_name=AGENT).sessions), state


async def test_a_case_runs_in_the_runs_sandbox_and_leaves_the_developers_state_alone():
    service = DjangoSessionService()
    await service.create_session(app_name=AGENT, user_id="ada", session_id="mine",
                                 state={"user:name": "Ada Lovelace", "app:popular_city": "Paris", "note": 1})
    before = await developer_view(service)
    run, [item] = await make_run(metrics.default_criteria(), cases={"plan_then_weather": demo_cases()["plan_then_weather"]})
    outcome = await engine.evaluate_case(run, item)
    assert outcome.status == "passed"
    assert await developer_view(service) == before  # plan_trip wrote user:, app: and session state: elsewhere
    sandbox = sandbox_of(run)
    assert (outcome.app_name, outcome.user_id, outcome.session_id) == (sandbox, "ada", f"eval-{run.pk}-0-0")
    theirs = await service.get_session(app_name=sandbox, user_id="ada", session_id=outcome.session_id)
    # The case started from its own session_input, not from the developer's state.
    assert theirs.state["user:name"] == "Ada" and theirs.state["app:popular_city"] == "Kyoto"


async def test_a_retried_case_starts_over_in_its_pinned_session():
    run, [item] = await make_run(metrics.default_criteria(), cases={"plan_lisbon": demo_cases()["plan_lisbon"]})
    first = await engine.evaluate_case(run, item)
    service = DjangoSessionService()
    events = len((await service.get_session(app_name=first.app_name, user_id=first.user_id,
                                            session_id=first.session_id)).events)
    again = await engine.evaluate_case(run, item)
    session = await service.get_session(app_name=again.app_name, user_id=again.user_id, session_id=again.session_id)
    assert (again.session_id, again.status, len(session.events)) == (first.session_id, "passed", events)


@sync_to_async
def store(run: EvalRun, outcome: progress.CaseOutcome) -> EvalCaseResult:
    progress.eval_case_result_store(run_pk=run.pk, outcome=outcome)
    return EvalCaseResult.objects.select_related("session__app").get(run=run, eval_id=outcome.eval_id)


async def test_the_stored_result_holds_adks_result_metric_dicts_and_links_its_session():
    criteria = {"tool_trajectory_avg_score": 1.0, "final_response_match_v2": 0.5}
    run, [item] = await make_run(criteria, judge_model=judges.SCRIPTED_JUDGE,
                                 cases={"plan_then_weather": demo_cases()["plan_then_weather"]})
    result = await store(run, await engine.evaluate_case(run, item))
    adk = AdkEvalCaseResult.model_validate(result.adk_result)
    assert "session_details" not in result.adk_result and adk.session_id == result.adk_session_id
    assert adk.final_eval_status.name == "PASSED" and result.status == "passed"
    assert [EvalMetricResult.model_validate(m).metric_name for m in result.metrics] == [
        m.metric_name for m in adk.overall_eval_metric_results]
    assert result.session.app.name == sandbox_of(run) and result.user_id == "ada"
    assert len(result.judge_samples) == 2 * 5  # two invocations, ADK's default five samples each
    rows = [row async for row in result.invocations.order_by("index")]
    assert [r.user_text for r in rows] == ["Plan a trip to Kyoto", "What is the weather in Kyoto?"]
    assert rows[0].actual_tool_calls == [{"name": "plan_trip", "args": {"city": "Kyoto"}}]
    assert rows[1].actual_response == "The weather in Kyoto is rain, 12°C."
    assert [EvalMetricResult.model_validate(m).metric_name for m in rows[1].metrics][:2] == list(criteria)


async def test_a_conversation_scenario_runs_with_the_scripted_user_simulator():
    case = {"eval_id": "scenario", "final_session_state": {"destination": "Lisbon"}, "conversation_scenario": {
        "starting_prompt": "Please plan a trip to Lisbon", "conversation_plan": "Ask about the weather in Lisbon."}}
    run, [item] = await make_run({"final_session_state_match": 1.0}, judge_model=judges.SCRIPTED_JUDGE,
                                 cases={"scenario": case})
    outcome = await engine.evaluate_case(run, item)
    assert [i.user_text for i in outcome.invocations] == ["Please plan a trip to Lisbon",
                                                          "Ask about the weather in Lisbon."]
    assert outcome.invocations[1].actual_response == "The weather in Lisbon is windy, 18°C."
    assert outcome.status == "passed"


class Broken(BaseAgent):
    async def _run_async_impl(self, ctx):
        raise RuntimeError("the agent broke")
        yield  # an async generator, as ADK wants


def broken_runner(name: str) -> Runner:
    return Runner(app_name=name, agent=Broken(name="broken"), session_service=DjangoSessionService(),
                  artifact_service=DjangoArtifactService(), memory_service=DjangoMemoryService())


async def test_an_agent_error_is_the_cases_error_with_adks_message(monkeypatch):
    monkeypatch.setattr(engine, "make_runner", broken_runner)
    run, [item] = await make_run(metrics.default_criteria(), cases={"greeting": demo_cases()["greeting"]})
    outcome = await engine.evaluate_case(run, item)
    assert (outcome.status, outcome.error, outcome.metrics) == ("error", "the agent broke", [])
    assert outcome.session_id == f"eval-{run.pk}-0-0"


async def test_a_case_that_cannot_run_is_an_error_outcome():
    run, [item] = await make_run(metrics.default_criteria(), cases={"greeting": demo_cases()["greeting"]})
    deleted = WorkItem(None, "gone", 1, 0, {})
    invalid = WorkItem(None, "bad", 2, 0, {"eval_id": "bad", "conversation": "not a list"})
    outcomes = [await engine.evaluate_case(run, i) for i in (deleted, invalid)]
    assert [o.status for o in outcomes] == ["error", "error"]
    assert "deleted" in outcomes[0].error and "not a valid ADK EvalCase" in outcomes[1].error
    unknown = await sync_to_async(EvalRun.objects.create)(eval_set=run.eval_set, app_name="no_such_agent",
                                                          metrics=run.metrics)
    outcome = await engine.evaluate_case(unknown, item)
    assert outcome.status == "error" and "no_such_agent" in outcome.error


def test_a_database_fault_is_an_infrastructure_fault_never_the_cases_error(monkeypatch):
    run, [item] = make_run.func(metrics.default_criteria(), cases={"plan_lisbon": demo_cases()["plan_lisbon"]})
    real_append = DjangoSessionService.append_event_sync
    calls = []

    def failing_append(self, session, event):
        calls.append(event)
        if len(calls) == 2:  # mid-turn, after the agent started
            raise OperationalError("server closed the connection unexpectedly")
        return real_append(self, session, event)

    monkeypatch.setattr(DjangoSessionService, "append_event_sync", failing_append)
    with pytest.raises(engine.InfrastructureFault, match="server closed the connection"):
        engine.evaluate_case_sync(run, item)

    monkeypatch.setattr(DjangoSessionService, "append_event_sync", real_append)
    outcome = engine.evaluate_case_sync(run, item)  # the retry starts over and passes
    assert outcome.status == "passed"
    session = Session.objects.get(app__name=outcome.app_name, session_id=outcome.session_id)
    assert session.user_id == outcome.user_id


@pytest.mark.parametrize("fault", [
    OperationalError("database is locked"), psycopg.OperationalError("connection refused"),
    RedisConnectionError("channel layer down"), sqlite3.OperationalError("disk I/O error"),
])
def test_infrastructure_errors_are_found_anywhere_in_the_exception_chain(fault):
    try:
        try:
            raise fault
        except Exception as exc:
            raise RuntimeError("the runner failed") from exc
    except RuntimeError as exc:
        assert engine.infrastructure_error(exc) is fault
    assert engine.infrastructure_error(RuntimeError("the agent's own")) is None
    assert engine.infrastructure_error(ValueError("bad args")) is None


async def test_the_agent_time_leaves_out_building_adks_eval_service(monkeypatch):
    # A process's first case imports ADK's evaluation engine while the service is built: seconds that
    # are not the agent's. Here building it takes 0.5 s; the demo's greeting takes a few milliseconds.
    built = engine._CaseRun._service

    def slow_build(self, registry):
        time.sleep(0.5)
        return built(self, registry)

    monkeypatch.setattr(engine._CaseRun, "_service", slow_build)
    run, [item] = await make_run(metrics.default_criteria(), cases={"greeting": demo_cases()["greeting"]})
    outcome = await engine.evaluate_case(run, item)
    assert outcome.status == "passed"
    assert outcome.agent_seconds < 0.5 <= outcome.seconds
