"""Writes made by other processes reach open pages live, on the embedded
default (no Redis: `sessions_app.relay`) as on Redis: the eval worker's cases,
and a script's sessions and events through `DjangoSessionService`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from eval_app import metrics, services
from eval_app.models import EvalRun
from sessions_app.models import App
from sessions_app.models import Session as SessionRow
from tests.eval_app.conftest import AGENT, demo_set  # noqa: F401 (a fixture)
from tests.eval_app.test_crash import WORKER_ARGS
from tests.workers import database_url_for_children

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
APP = "elsewhere_app"
# Set on the page once it is open: still there at the end, the page was never reloaded.
MARK = "() => { window.stayed = true; return true; }"
STAYED = "() => window.stayed === true"


def run_elsewhere(code: str, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "DJANGO_SETTINGS_MODULE": "adkui.settings",
           **env}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=120,
                          capture_output=True)


def say_elsewhere(session_id: str, texts: list[str]) -> None:
    run_elsewhere(f"from tests.workers import say; import os; "
                  f"say(os.environ['DATABASE_URL'], {APP!r}, 'ann', {session_id!r}, {json.dumps(texts)})")


def test_an_eval_run_worked_by_a_db_worker_process_fills_in_case_by_case(live_server, page, settings, demo_set):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    run = services.eval_run_create(
        eval_set=demo_set, app_name=AGENT, repeats=1,
        metrics=metrics.eval_metrics({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}),
    )
    page.goto(f"{live_server.url}/evals/runs/{run.pk}/")
    expect(page.locator("#run-status")).to_have_text("queued")
    assert page.locator("#case-results tr").count() == 0
    page.evaluate(MARK)

    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "DJANGO_SETTINGS_MODULE": "adkui.settings",
           "ADKUI_TASKS_BACKEND": "django_tasks_db.DatabaseBackend"}
    worker = subprocess.Popen([sys.executable, "manage.py", "db_worker", *WORKER_ARGS], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL)
    try:
        expect(page.locator("#run-status")).to_have_text("completed", timeout=120_000)
    finally:
        worker.kill()
        worker.wait(30)
    expect(page.locator("#case-results tr")).to_have_count(5)
    assert page.locator("#case-results .badge.verdict").all_inner_texts() == ["passed"] * 5
    assert page.locator("#progress-text").inner_text() == "5/5 (100 %)"
    assert page.evaluate(STAYED), "the page was reloaded"
    assert EvalRun.objects.get().status == EvalRun.COMPLETED
    assert page.js_errors == []


def test_events_another_process_appends_appear_on_the_open_session_page(live_server, page):
    say_elsewhere("s1", ["first, from another process"])
    session = SessionRow.objects.get(session_id="s1")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.evaluate(MARK)

    say_elsewhere("s1", ["second, from another process", "third, from another process"])
    timeline = page.locator("#timeline")
    expect(timeline).to_contain_text("third, from another process")
    expect(timeline).to_contain_text("second, from another process")
    for text in ("first", "second", "third"):  # each once: nothing doubled by the catch-up
        expect(timeline.get_by_text(f"{text}, from another process")).to_have_count(1)
    assert page.evaluate(STAYED), "the page was reloaded"
    assert page.js_errors == []


def test_sessions_another_process_creates_appear_in_the_open_app_page(live_server, page):
    say_elsewhere("s1", ["hello"])
    app = App.objects.get(name=APP)
    page.add_init_script("document.addEventListener('htmx:wsOpen', () => { window.socketOpen = true; })")
    page.goto(f"{live_server.url}/apps/{APP}/")
    expect(page.locator(".session-list")).to_contain_text("s1")
    page.wait_for_function("() => window.socketOpen === true")
    page.evaluate(MARK)

    say_elsewhere("s2-made-elsewhere", ["hello again"])
    expect(page.locator(".session-list")).to_contain_text("s2-made-elsewhere")
    assert page.evaluate(STAYED), "the page was reloaded"
    assert app.sessions.count() == 2


def test_the_home_page_counts_what_another_process_writes(live_server, page):
    say_elsewhere("s1", ["hello"])
    page.add_init_script("document.addEventListener('htmx:wsOpen', () => { window.socketOpen = true; })")
    page.goto(f"{live_server.url}/")
    expect(page.locator(f"#app-list tr[data-app={APP}] td").nth(2)).to_have_text("1")
    page.wait_for_function("() => window.socketOpen === true")
    page.evaluate(MARK)

    say_elsewhere("s2-made-elsewhere", ["hello again"])
    expect(page.locator(f"#app-list tr[data-app={APP}] td").nth(2)).to_have_text("2")
    expect(page.locator("#recent-sessions")).to_contain_text("s2-made-elsewhere")
    assert page.evaluate(STAYED), "the page was reloaded"
    assert page.js_errors == []
