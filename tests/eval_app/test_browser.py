"""In a real browser: import the demo eval set, run it against the demo agent, and
watch the progress bar reach 100 % and the scores arrive over the websocket."""
from __future__ import annotations

import json
import re

import pytest

from eval_app import judges, services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.models import EvalRun

from .conftest import DEMO_FILE

# The live server answers from its own thread: it sees only commits.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_run_started_in_the_ui_streams_to_100_percent_with_scores(live_server, page, settings):
    # The run's cases wait (a backend that only records them) until the test runs them, in the
    # server's thread, while the page watches: what it sees arrives over the websocket.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    page.goto(f"{live_server.url}/evals/")
    page.set_input_files("input[name=file]", str(DEMO_FILE))
    page.select_option("select[name=app_name]", "trip_planner")
    page.click("button:has-text('Import')")
    page.wait_for_url(re.compile(r"/evals/sets/\d+/$"))
    assert page.locator("table.cases tbody tr").count() == 5

    page.fill("input[name=repeats]", "6")  # 30 cases: long enough to watch it move
    with page.expect_response(re.compile(r"/evals/runs/\d+/$")) as first_render:
        page.click("#run-button")
    initial = int(re.search(r'aria-valuenow="(\d+)"', first_render.value.text()).group(1))
    assert initial < 100  # what follows arrives over the websocket, not with the page

    progress = page.locator("#run-progress .progress")
    progress.wait_for()
    live_server.call(services.eval_run_execute_inline, EvalRun.objects.get())
    page.wait_for_function(
        "() => document.querySelector('#run-progress .progress').getAttribute('aria-valuenow') === '100'",
        timeout=60_000,
    )
    page.wait_for_function("() => document.querySelector('#run-status').textContent.trim() === 'completed'")
    assert page.locator("#progress-text").inner_text() == "30/30 (100 %)"
    rows = page.locator("#case-results tr")
    assert rows.count() == 30
    assert page.locator("#case-results .badge.verdict").all_inner_texts() == ["passed"] * 30
    # Per-metric verdicts sit apart from the case verdict, each with its score; then
    # ADK's informational metrics, recorded for every run, with a value and no verdict.
    first = rows.first.locator("td.metric-cell")
    assert first.count() == 6
    texts = [re.sub(r"\s+", " ", t).strip() for t in first.all_inner_texts()]
    assert texts[:2] == ["1.0 PASSED", "1.0 PASSED"]
    assert all(re.fullmatch(r"[\d.]+", t) for t in texts[2:]), texts
    run = EvalRun.objects.get()
    assert (run.status, run.passed) == ("completed", 30)

    rows.first.locator("text=details").click()
    page.wait_for_url(re.compile(r"/evals/results/\d+/$"))
    assert page.locator("text=Expected response").count() == 1
    session_link = page.locator("#session-link")
    if session_link.count():  # the session page is sessions_app's
        session_link.click()
        page.wait_for_url(re.compile(r"/sessions/\d+/$"))
    assert page.js_errors == []


SCENARIO_SET = {"eval_set_id": "trip_scenarios", "eval_cases": [
    {"eval_id": "lisbon_chat", "final_session_state": {"destination": "Lisbon"}, "conversation_scenario": {
        "starting_prompt": "Please plan a trip to Lisbon", "conversation_plan": "Ask about the weather in Lisbon."}},
]}


def test_a_ui_run_of_scenario_cases_takes_adks_user_simulator_config(live_server, page, settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    parsed = parse_eval_set_file(filename="trip_scenarios.evalset.json", content=json.dumps(SCENARIO_SET))
    eval_set = services.eval_set_import(parsed=parsed, app_name="trip_planner")
    page.goto(f"{live_server.url}/evals/sets/{eval_set.pk}/")
    simulator = page.locator("#user-simulator")
    assert simulator.get_attribute("open") is None  # nothing stored: folded away
    page.click("#metric-choice > summary")  # the metrics' options are folded away
    page.uncheck("input[name=tool_trajectory_avg_score__on]")  # ADK's defaults need expected turns,
    page.uncheck("input[name=response_match_score__on]")  # which a scenario case does not have
    page.check("input[name=final_session_state_match__on]")
    simulator.locator("summary").click()

    # A value ADK's own config model refuses is named, with the field, and starts nothing.
    page.fill("textarea[name=user_simulator_config]", '{"max_allowed_invocations": "many"}')
    page.click("#run-button")
    alert = page.locator("[role=alert]", has_text="User simulator")
    alert.wait_for()
    assert "max_allowed_invocations" in alert.inner_text()
    assert not EvalRun.objects.exists()

    given = {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 1}
    page.fill("textarea[name=user_simulator_config]", json.dumps(given))
    page.click("#run-button")
    page.wait_for_url(re.compile(r"/evals/runs/\d+/$"))
    run = EvalRun.objects.get()
    assert run.user_simulator_config == {"type": "llm_backed", **given}
    live_server.call(services.eval_run_execute_inline, run)
    page.wait_for_function("() => document.querySelector('#run-status').textContent.trim() === 'completed'",
                           timeout=60_000)
    page.locator("#case-results tr").first.locator("text=details").click()
    page.wait_for_url(re.compile(r"/evals/results/\d+/$"))
    # One invocation allowed: the simulator's starting prompt alone (ADK's default, 20, gives this
    # scripted user a second turn, about the weather).
    assert page.locator(".user-says").all_inner_texts() == ["user simulated Please plan a trip to Lisbon"]

    # The set keeps it: the next run's form starts from it, unfolded.
    page.goto(f"{live_server.url}/evals/sets/{eval_set.pk}/")
    assert page.locator("#user-simulator").get_attribute("open") is not None
    assert json.loads(page.input_value("textarea[name=user_simulator_config]")) == {"type": "llm_backed", **given}
    assert page.js_errors == []
