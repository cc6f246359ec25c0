"""Searching an app's sessions by content, in headless chromium: from the app page to the event."""
from __future__ import annotations

import re

import pytest
from google.adk.events.event import Event
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
APP = "search_browser_app"
HOSTILE = '</div></section><img src="x" id="pwned"><mark>fake</mark> "unclosed'


def said(text: str) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(author="agent", invocation_id="inv-1", content=content)


def called(name: str, args: dict) -> Event:
    part = types.Part(function_call=types.FunctionCall(id="call-1", name=name, args=args))
    return Event(author="agent", invocation_id="inv-1", content=types.Content(role="model", parts=[part]))


@pytest.fixture
def trip(live_server) -> int:
    """A session whose hit (#31, a tool call) sits among more events than its page shows at first."""
    service = DjangoSessionService()

    def make() -> None:
        session = service.create_session_sync(app_name=APP, user_id="ann", session_id="trip-1")
        for event in [*(said(f"planning step {i}") for i in range(30)), called("book_flight", {"to": "Lisbon"}),
                      *(said(f"after booking {i}") for i in range(40)), said(HOSTILE)]:
            service.append_event_sync(session, event)
        other = service.create_session_sync(app_name=APP, user_id="bob", session_id="trip-2")
        service.append_event_sync(other, said("no flight to Lisbon yet"))

    live_server.call(make)
    return SessionRow.objects.get(session_id="trip-1").pk


def test_a_search_from_the_app_page_opens_the_session_at_the_event(page, live_server, trip):
    page.goto(f"{live_server.url}/apps/{APP}/")
    box = page.locator("#event-search input[name=q]")
    box.fill("book_flight")
    box.press("Enter")
    expect(page).to_have_url(re.compile(rf"/apps/{APP}/search/\?q=book_flight$"))
    hit = page.locator(".search-hit")
    expect(hit).to_have_count(1)
    expect(hit.locator("mark")).to_have_text("book_flight")
    expect(hit.locator(".badge.matched")).to_have_text("tool")
    hit.get_by_role("link", name="#31 agent").click()
    expect(page).to_have_url(f"{live_server.url}/sessions/{trip}/?at=31")
    event = page.locator("#event-31")
    expect(event).to_have_class(re.compile(r"\bselected\b"))
    expect(event).to_be_in_viewport()
    expect(page.locator("#state-panel")).to_contain_text("#31")
    assert not page.js_errors


def test_searching_again_on_the_search_page_swaps_the_results_and_keeps_the_address(page, live_server, trip):
    page.goto(f"{live_server.url}/apps/{APP}/search/?q=book_flight")
    page.evaluate("window.notReloaded = true")
    page.fill("#search-form input[name=q]", "lisbon")
    page.press("#search-form input[name=q]", "Enter")
    expect(page.locator("#search-count")).to_have_text(re.compile(r"2 events match"))
    expect(page.locator(".search-session")).to_have_count(2)  # one group per session
    expect(page).to_have_url(re.compile(r"\?q=lisbon"))
    assert page.evaluate("window.notReloaded") is True
    page.fill("#search-form input[name=user]", "bob")
    page.press("#search-form input[name=q]", "Enter")
    expect(page.locator("#search-count")).to_contain_text("1 event matches")
    expect(page.locator(".search-session h2")).to_contain_text("trip-2")
    page.fill("#search-form input[name=q]", '"')
    page.press("#search-form input[name=q]", "Enter")
    expect(page.locator("#search-error")).to_contain_text("The search has no word to search for")
    assert not page.js_errors


def test_a_stored_value_cannot_break_the_results(page, live_server, trip):
    page.goto(f"{live_server.url}/apps/{APP}/search/?q=unclosed")
    hit = page.locator(".search-hit")
    expect(hit).to_have_count(1)
    expect(hit).to_contain_text('<img src="x" id="pwned"><mark>fake</mark>')
    expect(page.locator("#pwned")).to_have_count(0)
    expect(hit.locator("mark")).to_have_text(["unclosed"])  # the stored <mark> is text, not markup
    expect(page.locator("#search-form")).to_be_visible()
    assert not page.js_errors
