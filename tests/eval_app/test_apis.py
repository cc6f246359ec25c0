"""The eval REST API: list sets, start a run with ADK's criteria, read its progress and results."""
from __future__ import annotations

import pytest
from google.adk.evaluation.eval_metrics import EvalMetric, RubricsBasedCriterion, ToolTrajectoryCriterion
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult

from eval_app import judges
from eval_app.models import EvalRun

from .conftest import AGENT

pytestmark = pytest.mark.django_db
RUBRIC = {"rubric_id": "r1", "rubric_content": {"text_property": "The answer names the city."}}


def start(client, demo_set, body):
    return client.post(f"/api/evals/sets/{demo_set.pk}/runs", body, content_type="application/json")


def test_it_lists_sets_and_starts_a_run_with_test_config_criteria(client, demo_set):
    [listed] = client.get("/api/evals/sets").json()
    assert (listed["eval_set_id"], listed["case_count"]) == ("trip_planner_demo", 5)

    response = start(client, demo_set, {
        "eval_ids": ["greeting"], "repeats": 2, "judge_model": judges.SCRIPTED_JUDGE,
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"},
            "rubric_based_final_response_quality_v1": {"threshold": 0.7, "rubrics": [RUBRIC]},
        },
    })
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["app_name"], body["total"], body["status"]) == (AGENT, 2, "queued")
    trajectory, rubric = (EvalMetric.model_validate(m) for m in body["metrics"])  # ADK's EvalMetric dicts
    criterion = ToolTrajectoryCriterion.model_validate(trajectory.criterion.model_dump())
    assert (trajectory.metric_name, criterion.threshold, criterion.match_type.name) == (
        "tool_trajectory_avg_score", 0.5, "IN_ORDER")
    criterion = RubricsBasedCriterion.model_validate(rubric.criterion.model_dump())
    assert (criterion.judge_model_options.judge_model, criterion.rubrics[0].rubric_id) == (judges.SCRIPTED_JUDGE, "r1")
    run = EvalRun.objects.get()
    assert (run.judge_model, run.repeats) == (judges.SCRIPTED_JUDGE, 2)
    detail = client.get(f"/api/evals/runs/{body['id']}").json()
    assert detail["percent"] == 0 and detail["results"] == []


def test_without_criteria_a_run_uses_adks_defaults(client, demo_set):
    response = start(client, demo_set, {"eval_ids": ["greeting"]})
    assert response.status_code == 201, response.json()
    assert [m["metric_name"] for m in response.json()["metrics"]] == ["tool_trajectory_avg_score",
                                                                      "response_match_score"]


@pytest.mark.parametrize("body, field, problem", [
    ({"criteria": {"no_such_metric": 0.5}}, "criteria", "criteria.no_such_metric"),
    ({"criteria": {"rubric_based_final_response_quality_v1": 0.5}}, "criteria", "rubrics"),
    ({"criteria": {"final_response_match_v2": 0.5}, "judge_model": "no-such-model-anywhere"}, "judge_model",
     "no-such-model-anywhere"),
    ({"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": "nope-x"}}}},
     "criteria", "criteria.final_response_match_v2.judge_model_options.judge_model"),
    ({"criteria": {"response_match_score": 0.5}, "user_simulator_config": {"type": "nope"}},
     "user_simulator_config", "user_simulator_config"),
    ({"repeats": 0}, "repeats", ""),
    ({"app_name": "nope"}, "app_name", "nope"),
])
def test_it_refuses_bad_input_naming_the_field(client, demo_set, body, field, problem):
    response = start(client, demo_set, body)
    assert response.status_code == 400 and problem in str(response.json()[field]), response.json()
    assert not EvalRun.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("async_db_threads")
def test_a_finished_runs_results_carry_adks_case_result_and_the_judges_verdicts(client, demo_set):
    response = start(client, demo_set, {"eval_ids": ["plan_lisbon"], "judge_model": judges.SCRIPTED_JUDGE,
                                        "criteria": {"final_response_match_v2": 0.5}})
    assert response.status_code == 201, response.json()
    detail = client.get(f"/api/evals/runs/{response.json()['id']}").json()
    assert detail["status"] == EvalRun.COMPLETED, detail
    [result] = detail["results"]
    adk = AdkEvalCaseResult.model_validate(result["adk_result"])
    assert (adk.eval_id, adk.final_eval_status.name) == ("plan_lisbon", "PASSED")
    assert {m.metric_name for m in adk.overall_eval_metric_results} >= {"final_response_match_v2", "token_usage_v1"}
    assert {s["metric_name"] for s in result["judge_samples"]} == {"final_response_match_v2"}
