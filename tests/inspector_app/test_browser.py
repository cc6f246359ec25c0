"""The inspector and the trace page in headless chromium (Playwright)."""
from __future__ import annotations

import asyncio
import json

import pytest
from google.adk.runners import Runner
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from inspector_app.models import ToolCall
from inspector_app.plugin import app_with_recorder
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

from .conftest import APP, make_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def run_turns(live_server, session_id: str | None, *texts: str) -> str:
    """Turns run on the server's own loop, as a chat from the page runs; returns the session id."""

    async def run() -> str:
        service = DjangoSessionService()
        runner = Runner(app=app_with_recorder(make_agent(), app_name=APP), app_name=APP, session_service=service)
        if session_id is None:
            session = await service.create_session(app_name=APP, user_id="web",
                                                   state={"user:name": "Ada", "topic": "<i>volcanoes</i>"})
        else:
            session = await service.get_session(app_name=APP, user_id="web", session_id=session_id)
        for text in texts:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(user_id="web", session_id=session.id, new_message=message):
                pass
        return session.id

    return asyncio.run_coroutine_threadsafe(run(), live_server.loop).result(timeout=60)


@pytest.fixture
def recorded(live_server) -> SessionRow:
    return SessionRow.objects.get(session_id=run_turns(live_server, None, "hi", "what is the weather?"))


def test_the_trace_opens_the_inspector_for_a_model_call(page, live_server, recorded):
    invocation = ToolCall.objects.get(session=recorded).invocation_id
    page.goto(f"{live_server.url}/inspect/sessions/{recorded.pk}/invocations/{invocation}/")
    expect(page.locator(".trace-row")).to_have_count(4)  # agent, model, tool, model
    expect(page.locator(".trace-row.kind-tool.failed")).to_contain_text("flaky_weather")

    page.locator(".trace-row.kind-model a.open").first.click()
    inspector = page.locator("#side-dialog #inspector")
    expect(inspector.locator('mark[data-key="user:name"]')).to_have_text("Ada")
    expect(inspector.locator('mark[data-key="topic"]')).to_have_text("<i>volcanoes</i>")  # shown as text
    assert page.locator("#side-dialog i").count() == 0

    inspector.locator('[data-tab="contents"]').click()
    expect(page.locator('#inspector [data-tab-body="contents"]')).to_contain_text("what is the weather?")
    page.locator('#inspector [data-tab="usage"]').click()
    expect(page.locator('#inspector [data-tab-body="usage"]')).to_contain_text("total tokens")

    first_call = page.locator("#inspector").get_attribute("data-model-call")
    page.locator(".trace-row.kind-model a.open").nth(1).click()
    # wait for the second call's inspector to replace the first, then open its diff
    expect(page.locator("#inspector")).not_to_have_attribute("data-model-call", first_call)
    page.locator('#inspector [data-tab="diff"]').click()
    expect(page.locator("#inspector .request-diff .d-add").first).to_be_visible()
    expect(page.locator("#inspector .request-diff")).to_contain_text("+response flaky_weather")

    page.locator(".trace-row.kind-tool a.open").click()
    expect(page.locator("#side-dialog .tool-inspector")).to_contain_text("No weather station for Oslo.")
    assert not page.js_errors


def test_the_inspect_button_opens_the_inspector_beside_the_timeline(page, live_server, recorded):
    """The inspect button of a timeline row opens the inspector in the side panel."""
    reply = EventRow.objects.filter(session=recorded, author="helper").order_by("seq").first()
    page.goto(f"{live_server.url}/sessions/{recorded.pk}/")
    page.locator(f"#event-{reply.seq} button", has_text="inspect").click()
    inspector = page.locator("#side-dialog #inspector")
    expect(inspector).to_contain_text("Model call")
    expect(inspector.locator('mark[data-key="user:name"]')).to_have_text("Ada")
    expect(inspector.locator(".placeholders")).to_contain_text("{topic?}")
    inspector.locator('[data-tab="response"]').click()
    expect(page.locator('#inspector [data-tab-body="response"]')).to_contain_text("Hello <b>there</b>!")
    expect(page.locator("#state-panel")).not_to_contain_text(f"State as of #{reply.seq}")  # the row click did not fire
    assert not page.js_errors, json.dumps(page.js_errors)


def test_the_header_totals_follow_new_runs(page, live_server, recorded):
    """The session header's token and latency totals refresh after a new run."""
    page.goto(f"{live_server.url}/sessions/{recorded.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    totals = page.locator("#inspector-totals")
    expect(totals).to_contain_text("3 model calls")
    run_turns(live_server, recorded.session_id, "hi again")
    expect(totals).to_contain_text("4 model calls")  # refreshed after the run's events arrived
    totals.locator("summary").click()
    expect(totals.locator("tr[data-invocation]")).to_have_count(3)
    assert not page.js_errors
