"""Metrics come from ADK's registry and ADK's EvalConfig; bad criteria are refused naming the field."""
from __future__ import annotations

import pytest
from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvent, InvocationEvents
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import (
    EvalMetric,
    EvalStatus,
    LlmAsAJudgeCriterion,
    PrebuiltMetrics,
    RubricsBasedCriterion,
    ToolTrajectoryCriterion,
)
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.genai import types

from eval_app import judges, metrics

RUBRIC = {"rubric_id": "r1", "rubric_content": {"text_property": "The answer names 'Lisbon'."}}


def test_metrics_info_is_adks_registry_with_the_state_metric():
    names = [info.metric_name for info in metrics.metrics_info()]
    assert set(names) == {m.value for m in PrebuiltMetrics} | {"final_session_state_match"}
    assert names == [i.metric_name for i in DEFAULT_METRIC_EVALUATOR_REGISTRY.get_registered_metrics()]
    assert all(info.description for info in metrics.metrics_info())
    assert metrics.INFORMATIONAL == ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                                     "invocation_duration_v1")


def test_metric_kinds_come_from_each_evaluators_criterion_class():
    assert metrics.is_judge_metric("final_response_match_v2")
    assert metrics.is_judge_metric("rubric_based_tool_use_quality_v1") and metrics.needs_rubrics(
        "rubric_based_tool_use_quality_v1")
    assert metrics.is_judge_metric("hallucinations_v1") and not metrics.needs_rubrics("hallucinations_v1")
    assert not metrics.is_judge_metric("tool_trajectory_avg_score")
    assert not metrics.is_judge_metric("final_session_state_match")
    assert metrics.criterion_class("tool_trajectory_avg_score") is ToolTrajectoryCriterion
    assert [metrics.status_name(s) for s in (1, 2, EvalStatus.NOT_EVALUATED, 4)] == [
        "PASSED", "FAILED", "NOT_EVALUATED", "INFORMATIONAL"]


def test_criteria_become_adks_own_eval_metrics():
    criteria = {"tool_trajectory_avg_score": 1, "response_match_score": 0.8, "final_session_state_match": 0.5}
    ours = metrics.eval_metrics(criteria)
    adks = get_eval_metrics_from_config(EvalConfig.model_validate({"criteria": criteria}))
    assert [m.metric_name for m in ours] == list(criteria)  # no informational ones: the engine adds those
    for mine, theirs in zip(ours, adks):
        assert (mine.metric_name, mine.threshold, mine.criterion.threshold) == (
            theirs.metric_name, theirs.threshold, theirs.criterion.threshold)


def test_trajectory_options_are_read_by_adks_criterion_class():
    [metric] = metrics.eval_metrics(
        {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "in-order", "ignoreArgs": True}})
    assert isinstance(metric.criterion, ToolTrajectoryCriterion)
    assert (metric.criterion.match_type.name, metric.criterion.ignore_args, metric.criterion.threshold) == (
        "IN_ORDER", True, 0.5)
    # Stored as JSON and read back by the run, it is the same metric.
    stored = EvalMetric.model_validate(metric.model_dump(mode="json"))
    assert ToolTrajectoryCriterion.model_validate(stored.criterion.model_dump()) == metric.criterion


def test_judge_metrics_get_the_runs_judge_model_unless_they_name_their_own():
    criteria = {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 2}},
        "rubric_based_final_response_quality_v1": {
            "threshold": 0.7, "rubrics": [RUBRIC],
            "judge_model_options": {"judge_model": judges.SCRIPTED_JUDGE, "num_samples": 3}},
    }
    v2, rubric = metrics.eval_metrics(criteria, judge_model="adkui-scripted-judge")
    assert isinstance(v2.criterion, LlmAsAJudgeCriterion)
    assert (v2.criterion.judge_model_options.judge_model, v2.criterion.judge_model_options.num_samples) == (
        judges.SCRIPTED_JUDGE, 2)
    assert isinstance(rubric.criterion, RubricsBasedCriterion) and rubric.criterion.rubrics[0].rubric_id == "r1"
    assert rubric.criterion.judge_model_options.num_samples == 3
    # No judge model anywhere: the default one (offline, the scripted judge).
    [default] = metrics.eval_metrics({"final_response_match_v2": 0.5})
    assert default.criterion.judge_model_options.judge_model == judges.default_judge_model()
    # A run's stored metrics keep their judge; the informational metrics are appended.
    run = metrics.run_metrics([v2.model_dump(mode="json")], judge_model="other-model")
    assert run[0].criterion.judge_model_options.judge_model == judges.SCRIPTED_JUDGE
    assert [m.metric_name for m in run[1:]] == list(metrics.INFORMATIONAL)


def test_criteria_round_trip_through_test_config_form():
    criteria = {
        "tool_trajectory_avg_score": {"threshold": 0.9, "match_type": "ANY_ORDER", "ignore_args": True},
        "response_match_score": 0.8,
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": judges.SCRIPTED_JUDGE,
                                                                              "num_samples": 2}},
    }
    parsed = metrics.eval_metrics(criteria)
    assert metrics.criteria_of(parsed) == criteria
    assert metrics.eval_metrics(metrics.criteria_of(parsed)) == parsed
    assert metrics.default_criteria() == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


@pytest.mark.parametrize("criteria, field, words", [
    ({"no_such_metric": 1.0}, "criteria.no_such_metric", "Unknown metric"),
    ({"tool_call_count_v1": 1.0}, "criteria.tool_call_count_v1", "informational"),
    ({"rubric_based_final_response_quality_v1": 0.5}, "criteria.rubric_based_final_response_quality_v1.rubrics",
     "rubric"),
    ({"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": "no-such-model-xyz"}}},
     "criteria.final_response_match_v2.judge_model_options.judge_model", "no-such-model-xyz"),
    ({"response_match_score": "high"}, "criteria.response_match_score", "number"),
    ({"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "SOMETIMES"}},
     "criteria.tool_trajectory_avg_score", "match_type"),
    ({"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 0}}},
     "criteria.final_response_match_v2", "num_samples"),
    (["response_match_score"], "criteria", "object"),
])
def test_bad_criteria_are_refused_naming_the_field(criteria, field, words):
    with pytest.raises(metrics.MetricConfigError) as caught:
        metrics.eval_metrics(criteria)
    assert caught.value.field == field
    assert words in str(caught.value)


def test_vertex_only_metrics_are_refused_offline(monkeypatch):
    for name in ("GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(metrics.MetricConfigError) as caught:
        metrics.eval_metrics({"safety_v1": 0.8})
    assert caught.value.field == "criteria.safety_v1" and "Vertex" in str(caught.value)


def test_tool_calls_and_response_text_read_both_invocation_shapes():
    call = types.FunctionCall(name="plan_trip", args={"city": "Lisbon"})
    user = types.Content(role="user", parts=[types.Part(text="hi")])
    final = types.Content(role="model", parts=[types.Part(text="a"), types.Part(text="b")])
    plain = Invocation(user_content=user, final_response=final, intermediate_data=IntermediateData(tool_uses=[call]))
    events = Invocation(user_content=user, intermediate_data=InvocationEvents(invocation_events=[
        InvocationEvent(author="agent", content=types.Content(role="model", parts=[types.Part(function_call=call)]))]))
    assert metrics.tool_calls(plain) == metrics.tool_calls(events) == [call]
    assert metrics.tool_calls(None) == []
    assert metrics.response_text(final) == "a\nb" and metrics.response_text(None) == ""
