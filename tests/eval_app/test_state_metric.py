"""`final_session_state_match`: in ADK's registry, scoring by key, bound per case, and as `adk eval` sees it."""
from __future__ import annotations

from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_case import EvalCase, Invocation, SessionInput
from google.adk.evaluation.eval_config import (
    EvalConfig,
    get_eval_metrics_from_config,
)
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric, EvalStatus
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.metric_evaluator_registry import (
    DEFAULT_METRIC_EVALUATOR_REGISTRY,
    register_custom_metrics_from_config,
)
from google.adk.sessions import InMemorySessionService
from google.genai import types

from eval_app import state_metric
from runtime_app.agents import load

NAME = state_metric.METRIC_NAME


def turn(text: str = "hi") -> Invocation:
    return Invocation(user_content=types.Content(role="user", parts=[types.Part(text=text)]))


def metric(threshold: float | None = 1.0) -> EvalMetric:
    criterion = BaseCriterion(threshold=threshold) if threshold is not None else None
    return EvalMetric(metric_name=NAME, threshold=threshold, criterion=criterion)


def evaluate(expected, actual, *, threshold: float | None = 1.0, turns: int = 2):
    registry = state_metric.registry_for_case(DEFAULT_METRIC_EVALUATOR_REGISTRY, expected=expected, actual=actual)
    evaluator = registry.get_evaluator(metric(threshold))
    return evaluator.evaluate_invocations([turn() for _ in range(turns)], None)


def by_key(result) -> dict[str, tuple[float, str]]:
    return {r.rubric_id: (r.score, r.rationale) for r in result.overall_rubric_scores}


def test_registered_in_adks_registry_with_its_info_at_app_start():
    [info] = [i for i in DEFAULT_METRIC_EVALUATOR_REGISTRY.get_registered_metrics() if i.metric_name == NAME]
    assert "final_session_state" in info.description
    assert (info.metric_value_info.interval.min_value, info.metric_value_info.interval.max_value) == (0.0, 1.0)
    # Unbound (the states unknown), it evaluates nothing, and says why.
    result = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric()).evaluate_invocations([turn()], None)
    assert result.overall_eval_status == EvalStatus.NOT_EVALUATED
    assert result.overall_rubric_scores[0].rationale == state_metric.NO_EXPECTED_STATE


def test_every_expected_key_of_every_scope_equal_passes():
    expected = {"destination": "Kyoto", "app:popular_city": "Kyoto", "user:trips": 1, "nested": {"a": [1, 2]}}
    actual = {**expected, "user:trips": 1.0, "other": "ignored"}
    result = evaluate(expected, actual)
    assert (result.overall_score, result.overall_eval_status) == (1.0, EvalStatus.PASSED)
    assert set(by_key(result)) == set(expected)  # keys the case does not name are not judged
    assert by_key(result)["app:popular_city"] == (1.0, 'expected "Kyoto" / actual "Kyoto"')


def test_score_is_the_share_of_equal_keys_each_key_reported():
    expected = {"destination": "Kyoto", "app:popular_city": "Kyoto", "user:trips": 2, "user:name": "Ada"}
    actual = {"destination": "Kyoto", "app:popular_city": "Oslo", "user:trips": 2}
    result = evaluate(expected, actual)
    assert (result.overall_score, result.overall_eval_status) == (0.5, EvalStatus.FAILED)
    keys = by_key(result)
    assert keys["app:popular_city"] == (0.0, 'expected "Kyoto" / actual "Oslo"')
    assert keys["user:name"] == (0.0, 'expected "Ada" / actual (absent)')
    assert keys["user:trips"] == (1.0, "expected 2 / actual 2")
    # The verdict lands on the last invocation: the state is the one after the last turn.
    per = result.per_invocation_results
    assert [p.eval_status for p in per] == [EvalStatus.NOT_EVALUATED, EvalStatus.FAILED]
    assert per[1].score == 0.5 and per[1].rubric_scores == result.overall_rubric_scores
    # A lower threshold passes the same state; no threshold at all means 1.0.
    assert evaluate(expected, actual, threshold=0.5).overall_eval_status == EvalStatus.PASSED
    assert evaluate(expected, actual, threshold=None).overall_eval_status == EvalStatus.FAILED


def test_values_compare_as_json_values():
    expected = {"n": 1, "s": "1", "flag": False, "deep": [1, {"x": True}]}
    actual = {"n": 1.0, "s": 1, "flag": 0, "deep": [1.0, {"x": True}]}
    assert {k: v[0] for k, v in by_key(evaluate(expected, actual)).items()} == {
        "n": 1.0, "s": 0.0, "flag": 0.0, "deep": 1.0,  # a number is not a string, false is not 0
    }


def test_no_expected_state_or_no_session_state_is_not_evaluated():
    for expected, actual, reason in [
        ({}, {"a": 1}, state_metric.NO_EXPECTED_STATE),
        (None, {"a": 1}, state_metric.NO_EXPECTED_STATE),
        ({"a": 1}, None, state_metric.NO_ACTUAL_STATE),
    ]:
        result = evaluate(expected, actual)
        assert result.overall_eval_status == EvalStatus.NOT_EVALUATED and result.overall_score is None
        assert result.overall_rubric_scores[0].rationale == reason


def test_a_bound_registry_leaves_the_default_one_alone():
    state_metric.registry_for_case(DEFAULT_METRIC_EVALUATOR_REGISTRY, expected={"a": 1}, actual={"a": 1})
    assert DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric()).expected_state is None


async def run_with_adk(case: EvalCase, eval_metrics: list[EvalMetric], registry_for) -> object:
    """ADK's LocalEvalService on in-memory services: inference, then evaluation with `registry_for(session)`."""
    sets = InMemoryEvalSetsManager()
    sets.create_eval_set(app_name="trip_planner", eval_set_id="s")
    sets.add_eval_case(app_name="trip_planner", eval_set_id="s", eval_case=case)
    sessions = InMemorySessionService()
    root = load("trip_planner").root

    def service(registry=None):
        return LocalEvalService(root_agent=root, eval_sets_manager=sets, session_service=sessions,
                                metric_evaluator_registry=registry)

    request = InferenceRequest(app_name="trip_planner", eval_set_id="s", inference_config=InferenceConfig())
    [inference] = [r async for r in service().perform_inference(inference_request=request)]
    session = await sessions.get_session(app_name="trip_planner", user_id=case.session_input.user_id,
                                         session_id=inference.session_id)
    evaluate_request = EvaluateRequest(inference_results=[inference],
                                       evaluate_config=EvaluateConfig(eval_metrics=eval_metrics))
    [result] = [r async for r in service(registry_for(session)).evaluate(evaluate_request=evaluate_request)]
    return result


def plan_case(final_state: dict) -> EvalCase:
    return EvalCase(
        eval_id="plan", conversation=[turn("Please plan a trip to Lisbon")],
        session_input=SessionInput(app_name="trip_planner", user_id="ada", state={"user:name": "Ada"}),
        final_session_state=final_state,
    )


async def test_in_adks_local_eval_service_the_bound_metric_scores_the_sessions_final_state():
    case = plan_case({"destination": "Lisbon", "user:last_destination": "Lisbon", "app:popular_city": "Lisbon",
                      "user:name": "Ada", "user:trips_planned": 2})
    result = await run_with_adk(case, [metric()], lambda session: state_metric.registry_for_case(
        DEFAULT_METRIC_EVALUATOR_REGISTRY, expected=case.final_session_state, actual=session.state))
    [overall] = result.overall_eval_metric_results
    assert (overall.score, overall.eval_status, result.final_eval_status) == (0.8, EvalStatus.FAILED, EvalStatus.FAILED)
    scores = {r.rubric_id: r.score for r in overall.details.rubric_scores}
    assert scores == {"destination": 1.0, "user:last_destination": 1.0, "app:popular_city": 1.0,
                      "user:name": 1.0, "user:trips_planned": 0.0}


async def test_as_adk_evals_custom_metric_it_is_not_evaluated_and_says_why():
    """`adk eval` with test_config.json custom_metrics naming our function: ADK calls it with
    invocations only, so the states cannot reach it."""
    config = EvalConfig.model_validate({
        "criteria": {NAME: 1.0},
        "custom_metrics": {NAME: {"code_config": {"name": "eval_app.state_metric.final_session_state_match"}}},
    })
    [eval_metric, *informational] = get_eval_metrics_from_config(config)
    registry = register_custom_metrics_from_config(config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    result = await run_with_adk(plan_case({"destination": "Lisbon"}), [eval_metric], lambda session: registry)
    [overall] = result.overall_eval_metric_results
    assert overall.eval_status == EvalStatus.NOT_EVALUATED and overall.score is None
    assert overall.details.rubric_scores[0].rationale == state_metric.CUSTOM_FUNCTION_REASON
    assert result.final_eval_status == EvalStatus.NOT_EVALUATED
