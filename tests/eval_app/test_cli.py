"""`manage.py eval`: adk eval's summary and details, ADK's result file, exit codes that can gate
CI, and the same scores ADK's own eval machinery gives for the same set and config."""
from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from google.adk.agents import BaseAgent
from google.adk.apps.app import App
from google.adk.cli.utils.agent_loader import AgentLoader
from google.adk.evaluation._eval_set_results_manager_utils import parse_eval_set_result_json
from google.adk.evaluation.base_eval_service import EvaluateConfig, EvaluateRequest, InferenceConfig, InferenceRequest
from google.adk.evaluation.eval_config import get_eval_metrics_from_config, get_evaluation_criteria_or_default
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file
from google.adk.evaluation.simulation.user_simulator_provider import UserSimulatorProvider
from google.adk.runners import Runner

from eval_app import engine, judges
from eval_app.models import EvalCase, EvalRun, EvalSet
from memory_app.artifact_service import DjangoArtifactService
from memory_app.memory_service import DjangoMemoryService
from sessions_app.session_service import DjangoSessionService

from .conftest import AGENT, DEMO_FILE

pytestmark = pytest.mark.usefixtures("async_db_threads")
# The command runs the engine in asgiref's worker thread, on its own connection: it sees only commits.
runs_the_engine = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
DEMO_AGENTS = ROOT / "runtime_app" / "demo_agents"
RUBRIC = {"rubric_id": "names_city", "rubric_content": {"text_property": "The answer names the city asked about."}}
JUDGED = {"judge_model_options": {"judge_model": judges.SCRIPTED_JUDGE, "num_samples": 2}}
PARITY_CONFIG = {"criteria": {
    "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
    "response_match_score": 0.8,
    "final_response_match_v2": {"threshold": 0.5, **JUDGED},
    "rubric_based_final_response_quality_v1": {"threshold": 0.5, **JUDGED, "rubrics": [RUBRIC]},
}}


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("eval", *args, stdout=out, stderr=io.StringIO())
    return exited.value.code, out.getvalue()


def failing_copy(tmp_path: Path) -> Path:
    data = json.loads(DEMO_FILE.read_text())
    data["eval_cases"][1]["conversation"][0]["final_response"]["parts"][0]["text"] = "Something else entirely."
    path = tmp_path / "failing.evalset.json"
    path.write_text(json.dumps(data))
    return path


def write_config(tmp_path: Path, config: dict[str, Any], name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


@runs_the_engine
def test_a_passing_eval_set_exits_0_with_adks_summary():
    code, out = run_cli(AGENT, str(DEMO_FILE))
    assert code == 0
    # The sibling test_config.json, printed as adk eval prints its EvalConfig.
    assert out.startswith("Using evaluation criteria: criteria={'tool_trajectory_avg_score': 1.0, "
                          "'response_match_score': 0.8}")
    assert "*" * 69 + "\nEval Run Summary\ntrip_planner_demo:\n  Tests passed: 5\n  Tests failed: 0" in out
    run = EvalRun.objects.get()
    assert (run.source, run.status) == ("cli", EvalRun.COMPLETED)  # the run is in the UI's history too


@runs_the_engine
def test_a_failing_case_exits_1_and_adks_details_show_why(tmp_path):
    code, out = run_cli(AGENT, str(failing_copy(tmp_path)), "--print-detailed-results")
    assert code == 1
    assert "Tests passed: 4\n  Tests failed: 1" in out
    assert "Eval Id: plan_lisbon\nOverall Eval Status: FAILED" in out
    assert "Metric: response_match_score, Status: FAILED, Score: 0.0, Threshold: 0.8" in out
    assert "expected_response:          Something else entirely." in out
    # ADK's informational metrics, recorded for every run, printed as ADK prints them.
    assert "Metric: tool_call_count_v1, Status: INFORMATIONAL" in out
    assert "Duration breakdown:" in out and "  tool_call_count_v1:         " in out


@runs_the_engine
def test_a_stored_eval_set_runs_by_id_with_a_case_selection_and_config(tmp_path):
    run_cli(AGENT, str(failing_copy(tmp_path)))
    config = write_config(tmp_path, {"criteria": {"tool_trajectory_avg_score": 1.0}})
    code, out = run_cli(AGENT, "trip_planner_demo:plan_lisbon,greeting", "--config", str(config))
    assert code == 0 and "Tests passed: 2\n  Tests failed: 0" in out
    assert EvalSet.objects.count() == 1
    assert EvalRun.objects.latest("pk").eval_ids == ["greeting", "plan_lisbon"]


@runs_the_engine
def test_results_json_is_adks_eval_set_result_with_the_sessions(tmp_path):
    target = tmp_path / "result.json"
    code, out = run_cli(AGENT, str(DEMO_FILE), "--results-json", str(target))
    assert code == 0 and f"Eval results written to {target}" in out
    result = parse_eval_set_result_json(target.read_text())  # ADK's own reader of .adk/eval_history files
    assert result.eval_set_result_id.startswith(f"{AGENT}_trip_planner_demo_")
    assert result.eval_set_result_name == result.eval_set_result_id
    assert [c.eval_id for c in result.eval_case_results] == [
        "greeting", "plan_lisbon", "weather_oslo", "plan_then_weather", "unknown_city"]
    case = result.eval_case_results[1]
    assert case.final_eval_status.name == "PASSED" and case.session_details.events
    assert case.session_details.id == case.session_id
    stored = EvalRun.objects.get().results.get(eval_id="plan_lisbon").adk_result
    assert AdkEvalCaseResult.model_validate(stored).overall_eval_metric_results == case.overall_eval_metric_results


class Broken(BaseAgent):
    async def _run_async_impl(self, ctx):
        raise RuntimeError("the agent broke")
        yield  # an async generator, as ADK wants


def broken_runner(name: str, **services: Any) -> Runner:
    return Runner(app_name=name, agent=Broken(name="broken"), session_service=DjangoSessionService(),
                  artifact_service=DjangoArtifactService(), memory_service=DjangoMemoryService())


@runs_the_engine
def test_an_agent_that_raises_fails_its_cases_with_the_error_shown(monkeypatch):
    monkeypatch.setattr(engine, "make_runner", broken_runner)
    code, out = run_cli(AGENT, f"{DEMO_FILE}:greeting", "--print-detailed-results")
    assert code == 1 and "Tests passed: 0\n  Tests failed: 1" in out
    assert "Eval Id: greeting\nOverall Eval Status: FAILED" in out and "Error: the agent broke" in out


@pytest.mark.django_db
@pytest.mark.parametrize("criteria, field", [
    ({"no_such_metric": 0.5}, "criteria.no_such_metric"),
    ({"rubric_based_final_response_quality_v1": {"threshold": 0.5}}, "criteria.rubric_based_final_response_quality_v1.rubrics"),
    ({"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"}}, "criteria.tool_trajectory_avg_score"),
    ({"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": "no-such-model-anywhere"}}},
     "criteria.final_response_match_v2.judge_model_options.judge_model"),
])
def test_a_bad_config_exits_2_naming_the_field_and_creates_nothing(tmp_path, criteria, field):
    config = write_config(tmp_path, {"criteria": criteria})
    with pytest.raises(CommandError) as caught:
        call_command("eval", AGENT, str(DEMO_FILE), "--config", str(config), stdout=io.StringIO())
    assert caught.value.returncode == 2 and field in str(caught.value)
    assert not EvalSet.objects.exists() and not EvalCase.objects.exists() and not EvalRun.objects.exists()


@pytest.mark.django_db
def test_bad_input_exits_2(tmp_path):
    bad = tmp_path / "bad.evalset.json"
    bad.write_text('{"eval_set_id": "x", "eval_cases": [{"conversation": []}]}')
    for args in ((AGENT, str(bad)), ("no_such_agent", str(DEMO_FILE)), (AGENT, "no_such_set"),
                 (AGENT, f"{DEMO_FILE}:no_such_case"), (AGENT, str(DEMO_FILE), "--config", str(tmp_path / "nope.json")),
                 (AGENT, str(DEMO_FILE), "--judge-model", "no-such-model-anywhere", "--config",
                  str(write_config(tmp_path, {"criteria": {"final_response_match_v2": 0.5}})))):
        with pytest.raises(CommandError) as caught:
            call_command("eval", *args, stdout=io.StringIO())
        assert caught.value.returncode == 2, args
    with pytest.raises(CommandError, match=r"eval_cases\[0\].eval_id: Field required"):
        call_command("eval", AGENT, str(bad))
    assert not EvalSet.objects.exists() and not EvalRun.objects.exists()


async def adks_own_eval(config: Path, eval_set_file: Path = DEMO_FILE) -> list[AdkEvalCaseResult]:
    """What `adk eval` does (google/adk/cli/cli_tools_click.py): ADK's loader, config reader, in-memory
    eval sets, user simulator provider and LocalEvalService, on ADK's own in-memory services."""
    loaded = AgentLoader(str(DEMO_AGENTS)).load_agent(AGENT)
    app, root_agent = (loaded, loaded.root_agent) if isinstance(loaded, App) else (None, loaded)
    eval_config = get_evaluation_criteria_or_default(str(config))
    eval_metrics = get_eval_metrics_from_config(eval_config)
    eval_set = load_eval_set_from_file(str(eval_set_file), str(eval_set_file))
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=AGENT, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name=AGENT, eval_set_id=eval_set.eval_set_id, eval_case=case)
    simulator = UserSimulatorProvider(user_simulator_config=eval_config.user_simulator_config)
    service = LocalEvalService(root_agent=root_agent, eval_sets_manager=manager, app=app,
                               user_simulator_provider=simulator)
    request = InferenceRequest(app_name=AGENT, eval_set_id=eval_set.eval_set_id, inference_config=InferenceConfig())
    inferences = [result async for result in service.perform_inference(inference_request=request)]
    evaluate = EvaluateRequest(inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=eval_metrics))
    return [result async for result in service.evaluate(evaluate_request=evaluate)]


MEASURED = ("invocation_duration_v1", "token_usage_v1")


def scores(results: list[AdkEvalCaseResult]) -> dict[tuple[str, str], tuple[float | None, str]]:
    """Each case's overall score and status per metric, but for time and prompt size: the demo's
    prompts carry `user:` state that ADK's in-memory run lets earlier cases (in whatever order its
    concurrent inferences finish) leave behind, where each of ours starts from its session_input."""
    return {
        (case.eval_id, metric.metric_name): (metric.score, metric.eval_status.name)
        for case in results for metric in case.overall_eval_metric_results
        if metric.metric_name not in MEASURED
    }


def metric_names(results: list[AdkEvalCaseResult]) -> set[str]:
    return {metric.metric_name for case in results for metric in case.overall_eval_metric_results}


@runs_the_engine
def test_scores_equal_adks_own_eval_of_the_same_set_and_config(tmp_path):
    config = write_config(tmp_path, PARITY_CONFIG, "test_config.json")
    target = tmp_path / "ours.json"
    code, _ = run_cli(AGENT, str(DEMO_FILE), "--config", str(config), "--results-json", str(target))
    ours = parse_eval_set_result_json(target.read_text()).eval_case_results
    adks = asyncio.run(adks_own_eval(config))
    assert metric_names(ours) == metric_names(adks) == {
        *PARITY_CONFIG["criteria"], "tool_call_count_v1", "inference_call_count_v1", *MEASURED}
    assert scores(ours) == scores(adks)
    judged = {s for (_, name), (s, _) in scores(ours).items() if name in PARITY_CONFIG["criteria"]}
    assert judged - {None}  # scored, not all NOT_EVALUATED
    assert code == (0 if all(case.final_eval_status.name == "PASSED" for case in ours) else 1)


SCENARIOS = {"eval_set_id": "trip_scenarios", "eval_cases": [
    {"eval_id": "lisbon_chat", "final_session_state": {"destination": "Lisbon"}, "conversation_scenario": {
        "starting_prompt": "Please plan a trip to Lisbon", "conversation_plan": "Ask about the weather in Lisbon."}},
    {"eval_id": "wrong_city", "final_session_state": {"destination": "Oslo"}, "conversation_scenario": {
        "starting_prompt": "Please plan a trip to Kyoto", "conversation_plan": "Ask about the weather in Kyoto."}},
]}
SCENARIO_CONFIG = {
    "criteria": {"final_session_state_match": 1.0},
    "user_simulator_config": {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 4},
}


@runs_the_engine
def test_scenarios_run_with_adks_user_simulator_as_adk_eval_runs_them(tmp_path):
    eval_set = write_config(tmp_path, SCENARIOS, "scenarios.evalset.json")
    config = write_config(tmp_path, SCENARIO_CONFIG, "test_config.json")  # beside the set: read as adk eval does
    target = tmp_path / "ours.json"
    code, out = run_cli(AGENT, str(eval_set), "--print-detailed-results", "--results-json", str(target))
    assert code == 1 and "Tests passed: 1\n  Tests failed: 1" in out
    assert "user_simulator_config=LlmBackedUserSimulatorConfig(" in out.splitlines()[0]
    assert "  prompt:                     Ask about the weather in Lisbon." in out  # the simulated user's turn
    assert "Metric: final_session_state_match, Status: FAILED, Score: 0.0, Threshold: 1.0" in out
    assert EvalRun.objects.get().user_simulator_config["max_allowed_invocations"] == 4
    ours = scores(parse_eval_set_result_json(target.read_text()).eval_case_results)
    adks = scores(asyncio.run(adks_own_eval(config, eval_set)))
    # The same simulated conversations: the same tool and model calls, turn for turn.
    state = "final_session_state_match"
    assert {k: v for k, v in ours.items() if k[1] != state} == {k: v for k, v in adks.items() if k[1] != state}
    assert "Invocation 2 of 2" in out
    # ADK's own service hands a metric neither the case nor the session, so only our runs score the state.
    assert (ours[("lisbon_chat", state)], ours[("wrong_city", state)]) == ((1.0, "PASSED"), (0.0, "FAILED"))
    assert adks[("lisbon_chat", state)] == (None, "NOT_EVALUATED")


@pytest.mark.slow
def test_the_process_exit_code_gates_ci(tmp_path):
    # The processes use a database of their own, so this test needs no test database.
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'ci.sqlite3'}", "PYTHONPATH": str(ROOT)}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    ok = subprocess.run([*manage, "eval", AGENT, str(DEMO_FILE)], env=env, cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([*manage, "eval", AGENT, str(failing_copy(tmp_path))], env=env, cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "Tests failed: 1" in bad.stdout
