"""`manage.py eval`: adk eval's summary, and exit codes that can gate CI."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from eval_app.models import EvalRun, EvalSet

from .conftest import AGENT, DEMO_FILE

pytestmark = pytest.mark.usefixtures("async_db_threads")
# The command runs the engine in asgiref's worker thread, on its own connection: it sees only commits.
runs_the_engine = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


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


@runs_the_engine
def test_a_passing_eval_set_exits_0_with_adks_summary():
    code, out = run_cli(AGENT, str(DEMO_FILE))
    assert code == 0
    assert "Eval Run Summary\ntrip_planner_demo:\n  Tests passed: 5\n  Tests failed: 0" in out
    assert EvalRun.objects.get().source == "cli"  # the run is in the UI's history too


@runs_the_engine
def test_a_failing_case_exits_1_and_details_show_why(tmp_path):
    code, out = run_cli(AGENT, str(failing_copy(tmp_path)), "--print-detailed-results")
    assert code == 1
    assert "Tests passed: 4\n  Tests failed: 1" in out
    assert "Eval Id: plan_lisbon\nOverall Eval Status: FAILED" in out
    assert "Metric: response_match_score, Status: FAILED, Score: 0.0, Threshold: 0.8" in out
    assert "expected_response:          Something else entirely." in out


@runs_the_engine
def test_a_stored_eval_set_runs_by_id_with_a_case_selection_and_config(tmp_path):
    run_cli(AGENT, str(failing_copy(tmp_path)))
    config = tmp_path / "lenient.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    code, out = run_cli(AGENT, "trip_planner_demo:plan_lisbon,greeting", "--config", str(config))
    assert code == 0 and "Tests passed: 2\n  Tests failed: 0" in out
    assert EvalSet.objects.count() == 1


@pytest.mark.django_db
def test_bad_input_exits_2(tmp_path):
    bad = tmp_path / "bad.evalset.json"
    bad.write_text('{"eval_set_id": "x", "eval_cases": [{"conversation": []}]}')
    for args in ((AGENT, str(bad)), ("no_such_agent", str(DEMO_FILE)), (AGENT, "no_such_set")):
        with pytest.raises(CommandError) as caught:
            call_command("eval", *args, stdout=io.StringIO())
        assert caught.value.returncode == 2
    with pytest.raises(CommandError, match=r"eval_cases\[0\].eval_id: Field required"):
        call_command("eval", AGENT, str(bad))


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
