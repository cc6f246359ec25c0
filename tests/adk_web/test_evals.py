"""ADK's eval routes beyond adk-web's happy path (tests/adk_web/test_replay.py): what ADK 2.13
lacks and adk-web calls anyway, sets shared by every agent, and what a run refuses."""
from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client
from google.adk.cli.dev_server import ListMetricsInfoResponse, RunEvalResult
from google.adk.evaluation.eval_metrics import EvalMetric, RubricsBasedCriterion, ToolTrajectoryCriterion
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

from eval_app import judges, services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.models import EvalRun, EvalSet
from tests.eval_app.conftest import DEMO_FILE

from .conftest import APP, body

DEV = f"/api/dev/apps/{APP}"
METRIC = [{"metricName": "response_match_score", "threshold": 0.5}]


@pytest.fixture
def demo_set(db: None) -> EvalSet:
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    return services.eval_set_import(parsed=parsed, app_name=APP)


def post(client: Client, path: str, data: Any) -> Any:
    return client.post(DEV + path, data, content_type="application/json")


@pytest.mark.django_db
def test_adk_web_reads_a_set_whole_and_deletes_it(client: Client, demo_set: EvalSet) -> None:
    """Its eval set details and its delete button: routes ADK 2.13's server does not have (404 there)."""
    eval_set = AdkEvalSet.model_validate(client.get(f"{DEV}/eval-sets/trip_planner_demo").json())
    assert (eval_set.name, len(eval_set.eval_cases)) == ("Trip planner demo", 5)
    deleted = client.delete(f"{DEV}/eval-sets/trip_planner_demo")
    assert deleted.status_code == 200 and deleted.content == b"null" and not EvalSet.objects.exists()
    assert client.get(f"{DEV}/eval-sets/trip_planner_demo").status_code == 404


@pytest.mark.django_db
def test_a_set_for_any_agent_is_every_agents(client: Client) -> None:
    services.eval_set_create(app_name="", eval_set_id="shared")
    services.eval_set_create(app_name="memory_demo", eval_set_id="memory_only")
    assert client.get(f"{DEV}/eval_sets").json() == ["shared"]
    assert client.get("/api/dev/apps/memory_demo/eval-sets").json() == {"evalSetIds": ["memory_only", "shared"]}
    assert client.get(f"{DEV}/eval_sets/shared/evals").json() == []


@pytest.mark.django_db
@pytest.mark.parametrize("eval_set_id, problem", [
    ("a-b", "letters, digits and _"), ("x" * 256, "at most 255"), ("", "non-empty"),
])
def test_a_new_set_id_is_checked(client: Client, eval_set_id: str, problem: str) -> None:
    response = post(client, "/eval-sets", {"eval_set": {"eval_set_id": eval_set_id, "eval_cases": []}})
    assert response.status_code == 400 and problem in str(response.json()) and not EvalSet.objects.exists()


@pytest.mark.django_db
def test_a_set_needs_an_agent(client: Client) -> None:
    response = client.post("/api/dev/apps/no_such_app/eval-sets", {"eval_set": {"eval_set_id": "s", "eval_cases": []}},
                           content_type="application/json")
    assert response.status_code == 404 and not EvalSet.objects.exists()


@pytest.mark.django_db
def test_a_case_id_longer_than_its_column_is_refused(client: Client, demo_set: EvalSet, service: Any) -> None:
    session = service.create_session_sync(app_name=APP, user_id="u")
    response = post(client, "/eval-sets/trip_planner_demo/add-session",
                     {"evalId": "x" * 256, "sessionId": session.id, "userId": "u"})
    assert response.status_code == 400 and "evalId" in str(response.json())
    empty = post(client, "/eval-sets/trip_planner_demo/add-session", {"evalId": "e", "sessionId": session.id,
                                                                     "userId": "u"})
    assert empty.status_code == 400 and "no user turns" in empty.json()["detail"]
    assert demo_set.cases.count() == 5


@pytest.mark.django_db
@pytest.mark.parametrize("run, problem", [
    ({"eval_metrics": [{"metricName": "no_such_metric", "threshold": 0.5}]}, "eval_metrics.0 (no_such_metric)"),
    ({"eval_metrics": [{"metricName": "response_match_score"}]}, "eval_metrics.0"),
    ({"eval_metrics": [*METRIC, {"metricName": "rubric_based_final_response_quality_v1",
                                 "criterion": {"threshold": 0.5}}]}, "eval_metrics.1.criterion.rubrics"),
    ({"eval_metrics": [{"metricName": "tool_trajectory_avg_score",
                        "criterion": {"threshold": 1, "matchType": "SOMETIMES"}}]}, "eval_metrics.0"),
    ({"eval_metrics": [{"metricName": "final_response_match_v2", "criterion": {
        "threshold": 0.5, "judgeModelOptions": {"judgeModel": "no-such-model-anywhere"}}}]},
     "eval_metrics.0.criterion.judge_model_options.judge_model"),
    ({"eval_metrics": METRIC * 2}, "eval_metrics.1.metric_name"),
    ({"eval_metrics": METRIC, "live_model_config": {}}, "live_model_config"),
    ({"eval_metrics": METRIC, "user_simulator_config": {"type": "llm"}}, "user_simulator_config"),
    ({"eval_metrics": METRIC, "eval_case_ids": ["no_such_case"]}, "at least one case"),
    ({"eval_case_ids": ["greeting"]}, "evalMetrics"),
])
def test_a_run_refuses_what_adkui_cannot_do_before_it_starts(client: Client, demo_set: EvalSet, run, problem) -> None:
    response = post(client, "/eval-sets/trip_planner_demo/run", run)
    assert response.status_code == 400 and problem in str(response.json()), response.json()
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_metrics_info_is_adks_whole_registry_with_the_state_metric(client: Client) -> None:
    infos = ListMetricsInfoResponse.model_validate(client.get(f"{DEV}/metrics-info").json()).metrics_info
    assert [i.metric_name for i in infos] == [i.metric_name for i in DEFAULT_METRIC_EVALUATOR_REGISTRY.get_registered_metrics()]
    names = {i.metric_name for i in infos}
    assert {"final_session_state_match", "rubric_based_final_response_quality_v1", "hallucinations_v1",
            "tool_call_count_v1", "invocation_duration_v1", "safety_v1"} <= names and len(names) >= 18


@pytest.mark.django_db
def test_a_run_stores_adks_eval_metrics_with_their_criteria(client: Client, demo_set: EvalSet) -> None:
    """Any metric ADK registers, its criterion read by the class its evaluator reads it with, and ADK's
    user simulator config; the run is not started here (no commit), only what it was asked to do is."""
    rubric = {"rubricId": "r1", "rubricContent": {"textProperty": "Names the city."}}
    metrics = [{"metricName": "rubric_based_final_response_quality_v1", "criterion": {
        "threshold": 0.5, "rubrics": [rubric], "judgeModelOptions": {"judgeModel": judges.SCRIPTED_JUDGE}}},
               {"metricName": "tool_call_count_v1"}]  # informational: recorded anyway, as ADK does
    with mock.patch("eval_app.apis.adk._run_answer", return_value=iter([b"null"])):
        response = post(client, "/eval-sets/trip_planner_demo/run", {
            "eval_metrics": metrics, "eval_case_ids": ["greeting"],
            "user_simulator_config": {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 3}})
    assert response.status_code == 200, body(response)
    run = EvalRun.objects.get()
    assert (run.user_simulator_config["type"], run.user_simulator_config["max_allowed_invocations"]) == (
        "llm_backed", 3)  # ADK's default type for a config without one
    [stored] = run.metrics
    metric = EvalMetric.model_validate(stored)
    criterion = RubricsBasedCriterion.model_validate(metric.criterion.model_dump())
    assert (metric.metric_name, criterion.rubrics[0].rubric_id) == ("rubric_based_final_response_quality_v1", "r1")


@pytest.mark.django_db
def test_a_run_of_an_unknown_set_is_a_400_as_in_adk(client: Client) -> None:
    response = post(client, "/eval-sets/no_such_set/run", {"eval_metrics": METRIC})
    assert response.status_code == 400 and response.json() == {"detail": "Eval set `no_such_set` not found."}


@pytest.mark.django_db(transaction=True)
def test_the_legacy_run_route_answers_a_bare_list_and_a_trajectory_criterion(
        client: Client, demo_set: EvalSet, eval_worker: None) -> None:
    metrics = [{"metricName": "tool_trajectory_avg_score",
                "criterion": {"threshold": 1.0, "matchType": "IN_ORDER"}}]
    response = post(client, "/eval_sets/trip_planner_demo/run_eval", {"eval_ids": ["greeting"], "eval_metrics": metrics})
    assert response.status_code == 200
    answer = body(response)
    [result] = [RunEvalResult.model_validate(r) for r in answer]
    assert (result.eval_id, result.final_eval_status.name) == ("greeting", "PASSED")
    by_name = {m["metricName"]: m for m in answer[0]["overallEvalMetricResults"]}
    assert by_name["tool_trajectory_avg_score"]["criterion"] == {
        "threshold": 1.0, "includeIntermediateResponsesInFinal": False, "matchType": 1, "ignoreArgs": False}  # IN_ORDER
    assert by_name["tool_call_count_v1"]["evalStatus"] == 4  # ADK's INFORMATIONAL, recorded for every run
    [stored] = EvalRun.objects.get().metrics
    assert ToolTrajectoryCriterion.model_validate(stored["criterion"]).match_type.name == "IN_ORDER"


@pytest.mark.django_db
def test_a_case_naming_an_unknown_user_persona_is_a_400(client: Client, demo_set: EvalSet) -> None:
    """Found by the fuzzer: ADK's persona validator raises its NotFoundError, not a ValueError."""
    case = {"evalId": "greeting", "conversationScenario": {
        "startingPrompt": "hi", "conversationPlan": "plan a trip", "userPersona": "AAA"}}
    response = client.put(f"{DEV}/eval-sets/trip_planner_demo/eval-cases/greeting", case,
                          content_type="application/json")
    assert response.status_code == 400 and "AAA" in str(response.json())
