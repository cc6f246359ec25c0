"""The first ten minutes, in headless chromium: the home dashboard and the way into
the demo, a broken agent's badge, the inspector's close button, and the favicon."""
from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connections
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from eval_app.models import EvalRun, EvalSet
from inspector_app.models import ToolCall
from runtime_app import agents, demo, runs
from runtime_app.runners import make_runner
from sessions_app.keys import SessionKey
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP = "trip_planner"


def turn(key: SessionKey, text: str) -> runs.RunRequest:
    return runs.RunRequest(key=key, new_message=types.Content(role="user", parts=[types.Part(text=text)]))


def new_session(live_server, session_id: str) -> SessionRow:
    live_server.call(DjangoSessionService().create_session_sync, app_name=APP, user_id="web", session_id=session_id)
    return SessionRow.objects.get(session_id=session_id)


def load_demo() -> None:
    """`manage.py load_demo`, in a thread of its own: it runs the agent with asyncio.run."""
    def load() -> None:
        try:
            demo.load_demo()
        finally:
            connections.close_all()

    thread = threading.Thread(target=load)
    thread.start()
    thread.join(timeout=120)
    assert SessionRow.objects.filter(session_id=demo.DEMO_SESSION).exists()


class HeldRun:
    """A chat run on the server's own loop, held after its first event until released."""

    def __init__(self, live_server, key: SessionKey, text: str) -> None:
        self._loop = live_server.loop
        self._started = threading.Event()
        self._release = asyncio.Event()
        self._done = asyncio.run_coroutine_threadsafe(self._run(turn(key, text)), self._loop)
        assert self._started.wait(30), "the held run did not start"

    async def _run(self, request: runs.RunRequest) -> None:
        run = aiter(runs.run_agent(request))
        try:
            await anext(run)
            self._started.set()
            await self._release.wait()
        finally:
            await run.aclose()

    def release(self) -> None:
        self._loop.call_soon_threadsafe(self._release.set)
        self._done.result(timeout=30)


def test_the_home_dashboard_leads_into_the_demo_and_shows_what_needs_a_look(page, live_server):
    load_demo()
    eval_set = EvalSet.objects.get(app_name=APP, eval_set_id="trip_planner_demo")
    EvalRun.objects.create(eval_set=eval_set, app_name=APP, status="completed", total=4, done=4, passed=3, failed=1)
    troubled = new_session(live_server, "troubled")
    SessionRow.objects.filter(pk=troubled.pk).update(error_count=2, tool_loop_count=1)
    busy = new_session(live_server, "busy")
    held = HeldRun(live_server, busy.key, "Please plan a trip to Kyoto")
    try:
        page.goto(f"{live_server.url}/")
        expect(page.locator("#running .running-chats")).to_contain_text("busy")
    finally:
        held.release()

    expect(page.locator('#app-list tr[data-app="trip_planner"] .badge')).to_have_text("loaded")
    phrases = page.locator('#get-started [data-agent="trip_planner"] code.phrase')
    expect(phrases).to_contain_text(["What is the weather in Lisbon?", "And the weather in Atlantis?",
                                     "Please plan a trip to Lisbon"])
    expect(page.locator('#get-started [data-agent="memory_demo"] code.phrase').first).to_be_visible()
    expect(page.locator("#attention")).to_contain_text("2 errors")
    expect(page.locator("#attention")).to_contain_text("troubled")
    expect(page.locator(f'#eval-latest tr[data-eval-set="{eval_set.eval_set_id}"] .pass-rate')).to_contain_text("75%")
    expect(page.locator("#recent-sessions")).to_contain_text("demo-session")

    page.locator("#demo-link").click()
    demo_pk = SessionRow.objects.get(session_id=demo.DEMO_SESSION).pk
    expect(page).to_have_url(f"{live_server.url}/sessions/{demo_pk}/")
    expect(page.locator("#timeline .event", has_text="And the weather in Atlantis?").first).to_be_visible()

    # A phrase from the home page, typed in a new session's chat, gets the answer its rule gives.
    page.go_back()
    phrase = page.locator('#get-started [data-agent="trip_planner"] code.phrase', has_text="plan a trip").text_content()
    fresh = new_session(live_server, "fresh")
    page.goto(f"{live_server.url}/sessions/{fresh.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.fill("#chat-form textarea[name=message]", phrase)
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_be_visible()
    assert not page.js_errors


def test_a_broken_agent_shows_a_red_failed_to_load_badge_with_its_error(page, live_server, settings, tmp_path):
    broken = tmp_path / "browser_broken_agent"
    broken.mkdir()
    (broken / "__init__.py").write_text("from . import agent\n")
    (broken / "agent.py").write_text("raise ImportError('needs <b>vertexai</b> installed\\nand more')\n")
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    agents._loader.cache_clear()
    try:
        page.goto(f"{live_server.url}/")
        row = page.locator('#app-list tr[data-app="browser_broken_agent"]')
        expect(row.locator(".badge")).to_have_text("failed to load")
        expect(row.locator(".badge.error")).to_be_visible()
        expect(row.locator(".agent-error")).to_contain_text("ImportError: ")
        expect(row.locator(".agent-error")).to_contain_text("needs <b>vertexai</b> installed")  # as text
        expect(row.locator(".agent-error")).not_to_contain_text("and more")
        assert row.locator(".agent-error b").count() == 0
        row.locator(".agent-error").click()
        expect(page.locator("#agent-error")).to_contain_text("needs <b>vertexai</b> installed")
    finally:
        agents._loader.cache_clear()


@pytest.fixture
def inspected(live_server) -> SessionRow:
    """A session with a turn of the demo agent, on the runner a chat gets (the recorder wired in)."""
    session = new_session(live_server, "inspected")

    async def run() -> None:
        runner = make_runner(APP)
        async for _ in runner.run_async(user_id="web", session_id=session.session_id,
                                        new_message=turn(session.key, "Please plan a trip to Lisbon").new_message):
            pass

    asyncio.run_coroutine_threadsafe(run(), live_server.loop).result(timeout=60)
    return session


def test_the_inspectors_own_page_has_no_side_panel_controls_and_leads_back(page, live_server, inspected):
    reply = EventRow.objects.filter(session=inspected, author=APP).order_by("seq").first()
    session_url = f"{live_server.url}/sessions/{inspected.pk}/"
    page.goto(f"{live_server.url}/inspect/sessions/{inspected.pk}/events/{reply.seq}/")
    expect(page.locator("#inspector")).to_contain_text("Model call")
    # Neither "×" (nothing to close) nor "page" (this is the page): only what does something.
    expect(page.locator('#inspector button[title="close"]')).to_be_hidden()
    expect(page.locator("#inspector").get_by_role("link", name="page", exact=True)).to_be_hidden()
    expect(page.locator("#inspector").get_by_role("link", name="trace")).to_be_visible()
    page.locator('#inspector [data-tab="contents"]').click()  # swapped in by htmx: still on its own page
    expect(page.locator('#inspector [data-tab-body="contents"]')).to_contain_text("Please plan a trip to Lisbon")
    expect(page.locator('#inspector button[title="close"]')).to_be_hidden()
    expect(page.locator("#inspector").get_by_role("link", name="page", exact=True)).to_be_hidden()
    page.locator("#back-to-session").click()
    expect(page).to_have_url(session_url)
    expect(page.locator("#timeline .event").first).to_be_visible()

    tool = ToolCall.objects.get(session=inspected)
    page.goto(f"{live_server.url}/inspect/tool-calls/{tool.pk}/")
    expect(page.locator(".tool-inspector")).to_contain_text("Tool call")
    expect(page.locator('.tool-inspector button[title="close"]')).to_be_hidden()
    page.locator("#back-to-session").click()
    expect(page).to_have_url(session_url)
    assert not page.js_errors


def test_closing_the_inspector_beside_the_timeline_closes_only_the_panel(page, live_server, inspected):
    reply = EventRow.objects.filter(session=inspected, author=APP).order_by("seq").first()
    session_url = f"{live_server.url}/sessions/{inspected.pk}/"
    page.goto(session_url)
    page.locator(f"#event-{reply.seq} button", has_text="inspect").click()
    expect(page.locator("#side-dialog #inspector")).to_contain_text("Model call")
    page.locator('#side-dialog #inspector button[title="close"]').click()
    expect(page.locator("#side-dialog #inspector")).to_have_count(0)
    expect(page).to_have_url(session_url)
    expect(page.locator(f"#event-{reply.seq}")).to_be_visible()
    assert not page.js_errors


def test_no_page_asks_for_a_missing_favicon(page, live_server, inspected):
    failed: list[str] = []
    page.on("response", lambda response: failed.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    # The browser asks for the icon the page links, not for /favicon.ico (a 404).
    with page.expect_request(lambda request: "favicon" in request.url) as icon:
        page.goto(f"{live_server.url}/")
    assert icon.value.url == f"{live_server.url}/static/adkui/favicon.svg"
    assert icon.value.response().status == 200
    reply = EventRow.objects.filter(session=inspected, author=APP).order_by("seq").first()
    for path in (f"/sessions/{inspected.pk}/", "/evals/", f"/inspect/sessions/{inspected.pk}/events/{reply.seq}/",
                 "/admin/login/"):
        page.goto(f"{live_server.url}{path}")
        expect(page.locator('link[rel="icon"]')).to_have_attribute("href", "/static/adkui/favicon.svg")
    assert failed == []
