"""Session health in headless chromium: the session header after a chat, the browser sorted by errors."""
from __future__ import annotations

import re

import pytest
from google.adk.events.event import Event as AdkEvent
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from sessions_app import services
from sessions_app.keys import SessionKey
from sessions_app.models import Session as SessionRow
from sessions_app.templatetags.health import usd

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_session_header_shows_the_health_of_a_chat(page, live_server, settings):
    settings.ADKUI_MODEL_PRICES = {"scripted": {"input": 2.0, "output": 8.0}}
    live_server.call(DjangoSessionService().create_session_sync, app_name="trip_planner", user_id="web",
                     session_id="health-1")
    pk = SessionRow.objects.get(session_id="health-1").pk
    page.goto(f"{live_server.url}/sessions/{pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    health = page.locator("#session-health")
    expect(health.locator("[data-signal=turns]")).to_have_text("0 turns")
    expect(health.locator("[data-signal=cost]")).to_have_text("—")  # nothing priced yet: unknown, not $0

    page.fill("#chat-form textarea[name=message]", "What is the weather in Atlantis?")
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text="Sorry: No weather station")).to_be_visible()
    expect(page.locator("#chat-status")).not_to_contain_text("running")
    page.reload()

    stored = SessionRow.objects.get(pk=pk)
    expect(health.locator("[data-signal=turns]")).to_have_text("1 turn")
    expect(health.locator("[data-signal=errors]")).to_have_text("1 error")
    expect(health.locator("[data-signal=errors]")).to_have_class(re.compile(r"\bbadge error\b"))
    expect(health.locator("[data-signal=errors-per-turn]")).to_have_text("(1.00 per turn)")
    expect(health.locator("[data-signal=loops]")).to_have_text("0 tool loops")
    expect(health.locator("[data-signal=tokens]")).to_have_text(
        f"{stored.prompt_tokens} in (0 cached) / {stored.output_tokens} out tokens")
    assert stored.prompt_tokens > 0 and stored.output_tokens > 0
    expect(health.locator("[data-signal=cost]")).to_have_text(usd(stored.cost_usd))
    assert stored.cost_usd == pytest.approx((stored.prompt_tokens * 2.0 + stored.output_tokens * 8.0) / 1e6)
    expect(health.locator("[data-signal=ttft]")).to_have_text(re.compile(r"^first token \d+ ms$"))
    assert stored.ttft_samples == 3  # transfer, weather call, answer

    # The timeline's "error" filter finds the tool error the header counts.
    page.select_option("#timeline-filters select[name=kind]", "error")
    events = page.locator("#timeline .event:not(.session-start)")
    expect(events).to_have_count(1)
    expect(events).to_contain_text("tool error")


def failed_tool(session_id: str) -> None:
    part = types.Part(function_response=types.FunctionResponse(name="lookup", response={"error": "down"}))
    event = AdkEvent(author="agent", invocation_id="inv", content=types.Content(role="user", parts=[part]))
    services.event_append(key=SessionKey("health_app", "ann", session_id), event=event)


def test_the_session_browser_sorts_by_errors_and_keeps_sessions_needing_attention(page, live_server):
    errors = {"calm": 0, "bumpy": 2, "broken": 3, "shaky": 1}
    for name, count in errors.items():  # created in this order: the newest (shaky) is listed first
        live_server.call(services.session_create, app_name="health_app", user_id="ann", session_id=name)
        for _ in range(count):
            live_server.call(failed_tool, name)
    live_server.call(services.session_create, app_name="health_app", user_id="ann", session_id="newest")
    page.goto(f"{live_server.url}/apps/health_app/")
    rows = page.locator("#session-rows .session-row a.mono")
    expect(rows).to_have_text(["newest", "shaky", "broken", "bumpy", "calm"])

    page.select_option("#session-filters select[name=sort]", "-errors")
    page.click("#session-filters button[type=submit]")
    expect(rows).to_have_text(["broken", "bumpy", "shaky", "newest", "calm"])
    expect(page.locator("#session-rows .session-row", has_text="broken").locator("[data-signal=errors]")).to_have_text("3")

    page.check("#session-filters input[name=attention]")
    page.click("#session-filters button[type=submit]")
    expect(rows).to_have_text(["broken", "bumpy", "shaky"])
    expect(page.locator("#session-filters select[name=sort]")).to_have_value("-errors")
