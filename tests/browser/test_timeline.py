"""The session page in a real headless chromium (Playwright)."""
from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
APP = "browser_app"


def event(text: str, delta: dict | None = None, **kwargs) -> Event:
    return Event(author=kwargs.pop("author", "agent"), invocation_id=kwargs.pop("invocation_id", "inv-1"),
                 content=types.Content(role="model", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}), **kwargs)


@pytest.fixture
def session(live_server):
    service = DjangoSessionService()

    def make():
        s = service.create_session_sync(app_name=APP, user_id="ann", session_id="b-1",
                                        state={"topic": "cats", "user:name": "Ann"})
        service.append_event_sync(s, event("first reply", {"topic": "dogs"}))
        return s

    adk = live_server.call(make)
    return adk, SessionRow.objects.get(session_id="b-1").pk


def append(live_server, adk_session, e: Event) -> None:
    live_server.call(DjangoSessionService().append_event_sync, adk_session, e)


def test_an_appended_event_appears_without_reload(page, live_server, session):
    adk, pk = session
    page.goto(f"{live_server.url}/sessions/{pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    append(live_server, adk, event("pushed **live**", {"app:visits": 3}))
    row = page.locator("#event-2")
    expect(row).to_contain_text("pushed live")
    expect(row.locator("strong")).to_have_text("live")
    expect(row.locator(".diff")).to_contain_text("app:visits")
    expect(page.locator("#state-panel")).to_contain_text("app:visits")  # the live state panel refreshed
    assert page.locator("#event-2").count() == 1 and not page.js_errors


def test_clicking_an_event_shows_the_state_as_of_it_and_key_history(page, live_server, session):
    adk, pk = session
    append(live_server, adk, event("second", {"topic": "birds"}))
    page.goto(f"{live_server.url}/sessions/{pk}/")
    page.locator("#event-1 .head").click()
    panel = page.locator("#state-panel")
    expect(panel).to_contain_text("State as of #1")
    expect(panel.locator("tr.hl")).to_contain_text("dogs")
    expect(panel).not_to_contain_text("birds")
    page.locator("#event-0 .head").click()
    expect(panel).to_contain_text("State as of #0")
    expect(panel).to_contain_text("cats")
    panel.get_by_role("link", name="topic", exact=True).click()
    history = page.locator("#key-history")
    expect(history).to_contain_text("History of topic")
    expect(history.locator("tr")).to_have_count(3)
    page.get_by_role("tab", name="user").click()
    expect(panel.locator("tr.scope-row:visible")).to_have_count(1)


def test_reconnecting_page_catches_up_without_duplicates(page, live_server, session):
    adk, pk = session
    page.goto(f"{live_server.url}/sessions/{pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    socket = "document.querySelector('#timeline-section')['htmx-internal-data'].webSocket"
    page.evaluate(f"{socket}.socket.close()")
    expect(page.locator("#live-label")).to_have_text("reconnecting…")
    append(live_server, adk, event("while away"))
    append(live_server, adk, event("also while away"))
    page.evaluate(f"{socket}.init()")  # what the ws extension does after an abnormal close
    expect(page.locator("#event-3")).to_contain_text("also while away")
    expect(page.locator("#event-2")).to_contain_text("while away")
    append(live_server, adk, event("after return"))
    expect(page.locator("#event-4")).to_contain_text("after return")
    assert page.locator("#timeline article.event").count() == 5  # #0 (created) + four events


def test_hostile_agent_text_renders_inert(page, live_server, session):
    adk, pk = session
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    payload = '<script>alert(1)</script><img src=x onerror=alert(2)> [go](javascript:alert(3)) "><svg onload=alert(4)>'
    append(live_server, adk, event(payload, {"evil": "<img src=x onerror=alert(5)>"}))
    page.goto(f"{live_server.url}/sessions/{pk}/")
    expect(page.locator("#event-2")).to_be_visible()
    assert page.locator("#timeline [onerror], #timeline [onload], #timeline script, #timeline a[href^='javascript']").count() == 0
    append(live_server, adk, event(payload))
    expect(page.locator("#event-3")).to_be_visible()
    page.wait_for_timeout(300)
    assert dialogs == []


def test_new_sessions_appear_in_the_browser_live(page, live_server, session):
    page.goto(f"{live_server.url}/apps/{APP}/")
    expect(page.locator("#session-rows")).to_contain_text("b-1")
    # A function, not an expression: Playwright polls an expression with eval, which the page's CSP forbids.
    page.wait_for_function(
        "() => document.querySelector('.session-list')['htmx-internal-data']?.webSocket?.socket?.readyState === 1")
    live_server.call(DjangoSessionService().create_session_sync, app_name=APP, user_id="zed", session_id="arrived-live")
    expect(page.locator("#session-rows .session-row").first).to_contain_text("arrived-live")
