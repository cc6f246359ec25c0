"""The agent graph on the session page, in headless chromium: nodes light up and
count as a chat's events arrive, and the selected event's node is marked."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every time a node gets the "lit" class, in order, as it happens (the flash is short).
WATCH_LIT = """
window.litNodes = [];
new MutationObserver(records => records.forEach(r => {
  if (!/\\blit\\b/.test(r.oldValue || '') && r.target.classList.contains('lit')) window.litNodes.push(r.target.dataset.node);
})).observe(document.getElementById('agent-graph'), {subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ['class']});
window.notReloaded = true;
"""
LIT = re.compile(r"\blit\b")
SELECTED = re.compile(r"\bselected\b")
KEYS = ["trip_planner", "plan_trip", "weather_expert", "get_weather"]


@pytest.fixture
def demo_session(live_server):
    live_server.call(DjangoSessionService().create_session_sync, app_name="trip_planner", user_id="web", session_id="graph-1")
    return SessionRow.objects.get(session_id="graph-1").pk


def node(page, key: str):
    return page.locator(f'#agent-graph .graph-node[data-node="{key}"]')


def stats(page, key: str):
    return node(page, key).locator(".graph-stats")


def chat(page, words: str, reply: str) -> None:
    page.fill("#chat-form textarea[name=message]", words)
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text=reply)).to_be_visible()
    expect(page.locator("#chat-status")).not_to_contain_text("running")


def test_nodes_light_up_and_count_live_and_the_selected_event_s_node_is_marked(page, live_server, demo_session):
    page.goto(f"{live_server.url}/sessions/{demo_session}/")
    expect(page.locator("#live-label")).to_have_text("live")
    for key in KEYS:
        expect(stats(page, key)).to_have_text("not called")
    page.evaluate(WATCH_LIT)

    chat(page, "Please plan a trip to Kyoto", "Done! Your trip is planned.")
    expect(stats(page, "plan_trip")).to_have_text(re.compile(r"^1 call · \d+ ms$"))
    expect(stats(page, "trip_planner")).to_have_text(re.compile(r"^2 calls · "))  # the call, then the answer
    expect(stats(page, "weather_expert")).to_have_text("not called")
    assert page.evaluate("window.litNodes") == ["trip_planner", "plan_trip", "trip_planner"]

    chat(page, "What is the weather in Kyoto?", "The weather in Kyoto is rain")
    expect(stats(page, "weather_expert")).to_have_text(re.compile(r"^2 calls · "))
    expect(stats(page, "get_weather")).to_have_text(re.compile(r"^1 call · "))
    expect(stats(page, "trip_planner")).to_have_text(re.compile(r"^3 calls · "))  # + the transfer
    assert page.evaluate("window.litNodes")[3:] == ["trip_planner", "weather_expert", "get_weather", "weather_expert"]
    expect(node(page, "get_weather")).not_to_have_class(LIT)  # the flash passes
    assert page.evaluate("window.notReloaded") is True  # all of it live, over the websocket
    live = {key: node(page, key).get_attribute("data-calls") for key in KEYS}

    tool_row = page.locator("#timeline .event", has=page.locator(".response .name", has_text="plan_trip"))
    tool_row.locator(".seq").click()
    expect(node(page, "plan_trip")).to_have_class(SELECTED)
    expect(page.locator("#agent-graph .graph-node.selected")).to_have_count(1)
    answer_row = page.locator("#timeline .event", has_text="The weather in Kyoto is rain")
    answer_row.locator(".seq").click()
    expect(node(page, "weather_expert")).to_have_class(SELECTED)
    expect(node(page, "plan_trip")).not_to_have_class(SELECTED)
    expect(page).to_have_url(re.compile(r"\?at=\d+$"))

    page.reload()  # the address keeps the selection; the server's counts match the live ones
    expect(node(page, "weather_expert")).to_have_class(SELECTED)
    assert {key: node(page, key).get_attribute("data-calls") for key in KEYS} == live == {
        "trip_planner": "3", "plan_trip": "1", "weather_expert": "2", "get_weather": "1",
    }
