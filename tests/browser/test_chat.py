"""Chatting with the demo agent from the session page, in headless chromium."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Remembers every streaming row's text as the page shows it, before the final event replaces it.
WATCH_PARTIALS = """
window.partialTexts = [];
new MutationObserver(() => {
  document.querySelectorAll('#timeline .is-partial').forEach(el => window.partialTexts.push(el.textContent));
}).observe(document.getElementById('timeline'), {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture
def demo_session(live_server):
    live_server.call(DjangoSessionService().create_session_sync, app_name="trip_planner", user_id="web", session_id="chat-1")
    return SessionRow.objects.get(session_id="chat-1").pk


def test_chat_streams_text_then_shows_the_final_event(page, live_server, demo_session):
    page.goto(f"{live_server.url}/sessions/{demo_session}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.evaluate(WATCH_PARTIALS)
    page.fill("#chat-form textarea[name=message]", "Please plan a trip to Kyoto")
    page.click("#chat-send")
    final = page.locator("#timeline .event", has_text="Done! Your trip is planned.")
    expect(final).to_be_visible()
    expect(page.locator("#timeline .event", has_text="Please plan a trip to Kyoto")).to_be_visible()
    expect(page.locator("#timeline .call .name", has_text="plan_trip")).to_be_visible()
    expect(page.locator("#timeline .is-partial")).to_have_count(0)  # the stored event replaced the streamed row
    texts = page.evaluate("window.partialTexts")
    assert any("Done!" in t and "planned." not in t for t in texts), texts  # seen mid-stream, chunk by chunk
    expect(page.locator("#chat-status")).not_to_contain_text("running")
    expect(page.locator("#state-panel")).to_contain_text("Kyoto")
    assert EventRow.objects.filter(session_id=demo_session).count() == 4


def test_chat_without_streaming_and_a_state_delta(page, live_server, demo_session):
    page.goto(f"{live_server.url}/sessions/{demo_session}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.fill("#chat-form textarea[name=message]", "Hi there!")
    page.click("#chat-form summary")
    page.fill("#chat-form textarea[name=state_delta]", '{"user:tier": "gold"}')
    page.uncheck("#chat-form input[name=streaming]")
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text="Ask me to plan a trip")).to_be_visible()
    expect(page.locator("#state-panel")).to_contain_text("user:tier")


def test_a_bad_state_delta_shows_an_error_and_runs_nothing(page, live_server, demo_session):
    page.goto(f"{live_server.url}/sessions/{demo_session}/")
    page.fill("#chat-form textarea[name=message]", "Hi")
    page.click("#chat-form summary")
    page.fill("#chat-form textarea[name=state_delta]", '{"broken": ')
    page.click("#chat-send")
    expect(page.locator("#chat-panel")).to_contain_text("Not valid JSON")
    assert EventRow.objects.filter(session_id=demo_session).count() == 0


def test_rewind_from_a_row(page, live_server, demo_session):
    page.goto(f"{live_server.url}/sessions/{demo_session}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.fill("#chat-form textarea[name=message]", "Please plan a trip to Paris")
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_be_visible()
    page.locator("#event-2 button", has_text="rewind").click()
    expect(page.locator("#rewind-card")).to_contain_text("destination")
    page.click("#rewind-confirm")
    expect(page.locator("#rewind-card")).to_contain_text("Rewound")
    expect(page.locator("#timeline .event .badge", has_text="rewind before")).to_be_visible()
