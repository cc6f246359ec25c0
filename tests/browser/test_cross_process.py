"""Writes made by other processes reach open pages live, on the embedded
default (no Redis: `sessions_app.relay`) as on Redis: the eval worker's cases,
and a script's sessions and events through `DjangoSessionService`."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from eval_app import metrics, services
from eval_app.models import EvalRun
from sessions_app.models import App
from sessions_app.models import Session as SessionRow
from tests.conftest import wait_until
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


@pytest.fixture
def adk_api_server(tmp_path):
    """ADK's own `adk api_server`, in a process of its own, on a copy of the demo
    agent: `start(flags, env)` with the flags and environment to start it with."""
    started: list[subprocess.Popen] = []

    def start(flags: list[str], env: dict[str, str]) -> str:
        agents = tmp_path / "agents"
        shutil.copytree(ROOT / "runtime_app" / "demo_agents" / "trip_planner", agents / "trip_planner")
        (agents / "services.py").write_text("from adkui.adk import register_schemes\n\nregister_schemes()\n")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
        command = [str(Path(sys.executable).parent / "adk"), "api_server", "--port", str(port), *flags, str(agents)]
        started.append(subprocess.Popen(command, env=base | env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: started[-1].poll() is None and httpx.get(f"{url}/list-apps").status_code == 200,
                   timeout=120, interval=0.25, ignore=httpx.TransportError)
        return url

    yield start
    for process in started:
        process.kill()
        process.wait(30)


def chat(adk: str, session_id: str, text: str) -> list[dict]:
    ran = httpx.post(f"{adk}/run", timeout=60, json={
        "appName": "trip_planner", "userId": "ann", "sessionId": session_id,
        "newMessage": {"role": "user", "parts": [{"text": text}]}})
    assert ran.status_code == 200, ran.text
    return ran.json()


@pytest.mark.parametrize("uri_for, env_database_url", [
    (lambda url: "adkui://", True),  # this install's database, as DATABASE_URL names it
    (lambda url: f"adkui:{url}", False),  # the database named in the URI
], ids=["adkui://", "adkui:DATABASE-URL"])
def test_a_chat_through_adks_own_api_server_shows_live_in_adkui(live_server, page, adk_api_server, uri_for,
                                                                env_database_url):
    uri = uri_for(database_url_for_children())
    env = {"DATABASE_URL": database_url_for_children()} if env_database_url else {}
    adk = adk_api_server([f"--session_service_uri={uri}", f"--artifact_service_uri={uri}",
                          f"--memory_service_uri={uri}"], env)
    created = httpx.post(f"{adk}/apps/trip_planner/users/ann/sessions/from-adk", json={"mood": "curious"})  # ADK: the body is the state
    assert created.status_code == 200, created.text
    session = SessionRow.objects.get(app__name="trip_planner", session_id="from-adk")
    assert session.state == {"mood": "curious"}
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.evaluate(MARK)

    events = chat(adk, "from-adk", "Plan a trip to Lisbon")
    timeline = page.locator("#timeline")
    expect(timeline).to_contain_text("Plan a trip to Lisbon")
    expect(timeline).to_contain_text("plan_trip")
    expect(timeline).to_contain_text(events[-1]["content"]["parts"][0]["text"])
    expect(timeline).to_contain_text("destination")  # the state diff of the tool call's event
    assert page.evaluate(STAYED), "the page was reloaded"
    assert SessionRow.objects.get(pk=session.pk).revision == len(events) + 1
    assert page.js_errors == []


@pytest.mark.parametrize("schema", ["2", "1"])  # ADK's telemetry schema: v2 (its default) and the legacy v1
def test_a_deployed_agents_opentelemetry_shows_its_invocations_in_adkui(live_server, page, adk_api_server, schema):
    # ADK's own exporter (google-adk[otel]), pointed at adkui as at any OTLP collector;
    # the agent keeps its sessions in ADK's in-memory service: adkui sees only the spans.
    adk = adk_api_server([], {"OTEL_EXPORTER_OTLP_ENDPOINT": live_server.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
                              "OTEL_BLRP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "deployed-trips",
                              "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT",
                              "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": schema})
    assert httpx.post(f"{adk}/apps/trip_planner/users/ann/sessions/deployed", json={}).status_code == 200
    events = chat(adk, "deployed", "Plan a trip to Lisbon")
    session = wait_until(lambda: SessionRow.objects.filter(session_id="deployed", revision__gte=len(events) + 1).first(),
                         timeout=30, interval=0.2, message="the spans did not arrive")
    assert (session.app.name, session.imported_from) == ("deployed-trips", "otlp")

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    timeline = page.locator("#timeline")
    expect(timeline).to_contain_text("Plan a trip to Lisbon")
    expect(timeline).to_contain_text("plan_trip")
    expect(timeline).to_contain_text(events[-1]["content"]["parts"][0]["text"])
    invocation = events[0]["invocationId"]
    page.goto(f"{live_server.url}/inspect/sessions/{session.pk}/invocations/{invocation}/")
    trace = page.locator("main")
    expect(trace).to_contain_text("plan_trip")
    expect(trace).to_contain_text("trip_planner")
    # The reply's call and the tool's response pair up, as in a session adkui ran itself.
    calls = [p for e in session.events.all() for p in e.data.get("content", {}).get("parts", []) if "function_call" in p]
    answers = [p for e in session.events.all() for p in e.data.get("content", {}).get("parts", [])
               if "function_response" in p]
    assert [c["function_call"]["id"] for c in calls] == [a["function_response"]["id"] for a in answers]
    assert page.js_errors == []
