"""In a real browser: import the demo eval set, run it against the demo agent, and
watch the progress bar reach 100 % and the scores arrive over the websocket."""
from __future__ import annotations

import re

import pytest

from eval_app import services
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
