"""Replaying a demo session after its agent's code changed, in headless chromium."""
from __future__ import annotations

import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from eval_app.models import EvalCase
from sessions_app.models import Session as SessionRow
from tests.runtime_app.test_replay import write_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO = Path(__file__).resolve().parents[2] / "runtime_app" / "demo_agents" / "trip_planner"


@pytest.fixture
def demo_copy(settings, tmp_path, monkeypatch):
    """The trip planner demo agent, copied into an agents folder of its own under a fresh name,
    so the test can edit its code as a developer would."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit within the same second must not load old bytecode
    name = f"trip_copy_{uuid.uuid4().hex[:8]}"
    shutil.copytree(DEMO, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    yield tmp_path / name / "agent.py", name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


@pytest.fixture
def console_errors(page):
    """Console errors (a CSP violation is one), except chromium's own request for a favicon."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "favicon" not in (
        m.location.get("url") or "") else None)
    return errors


def test_replay_after_an_edit_shows_the_changed_reply_side_by_side(page, live_server, demo_copy, console_errors):
    agent_file, name = demo_copy
    live_server.call(DjangoSessionService().create_session_sync, app_name=name, user_id="web", session_id="trip-1")
    original = SessionRow.objects.get(session_id="trip-1")
    page.goto(f"{live_server.url}/sessions/{original.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    page.fill("#chat-form textarea[name=message]", "Please plan a trip to Kyoto")
    page.click("#chat-send")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_be_visible()
    expect(page.locator("#chat-status")).not_to_contain_text("running")

    agent_file.write_text(agent_file.read_text().replace("is planned.", "is booked."))
    page.click("#replay-start")

    expect(page).to_have_url(re.compile(r"/sessions/\d+/replay/$"))
    expect(page.locator("#replay-status")).to_contain_text("finished: 1 turn replayed")
    turn = page.locator("#turn-1")
    expect(turn).to_have_class(re.compile(r"\bis-changed\b"))
    expect(turn.locator(".badge", has_text="response changed")).to_be_visible()
    expect(turn.locator(".badge", has_text="tools changed")).to_have_count(0)  # plan_trip(city=Kyoto) both times
    expect(turn.locator('.replay-text[data-side="original"] .d-missing')).to_have_text("planned.")
    expect(turn.locator('.replay-text[data-side="replay"] .d-extra')).to_have_text("booked.")
    expect(page.locator("#replay-changed-count")).to_have_text("1")
    assert page.js_errors == [] and console_errors == []

    page.click("#replay-to-eval")
    expect(page.locator(".add-to-eval-set.done")).to_contain_text("Added case")
    assert EvalCase.objects.filter(eval_set__app_name=name).count() == 1

    page.click("#replay-link")
    expect(page.locator("#replay-origin")).to_contain_text("trip-1")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is booked.")).to_be_visible()
    replay = SessionRow.objects.get(replay_of=original)
    assert page.url.endswith(f"/sessions/{replay.pk}/")


def test_the_comparison_page_fills_in_while_the_replay_runs(page, live_server, settings, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    name = f"probe_{uuid.uuid4().hex[:8]}"
    write_agent(tmp_path, name, tool="lookup", args={"city": "Oslo"}, text="It is cold in Oslo.")
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    try:
        live_server.call(DjangoSessionService().create_session_sync, app_name=name, user_id="web", session_id="probe-1")
        original = SessionRow.objects.get(session_id="probe-1")
        page.goto(f"{live_server.url}/sessions/{original.pk}/")
        expect(page.locator("#live-label")).to_have_text("live")
        page.fill("#chat-form textarea[name=message]", "What is the weather in Oslo?")
        page.click("#chat-send")
        expect(page.locator("#timeline .event", has_text="It is cold in Oslo.")).to_be_visible()
        # The new code's tool holds its answer until the gate file appears.
        write_agent(tmp_path, name, tool="hold", args={"city": "Oslo"}, text="Held in Oslo.")
        page.click("#replay-start")

        expect(page.locator("#replay-status")).to_contain_text("replaying: turn 1 of 1")
        expect(page.locator("#turn-1 .badge", has_text="tools changed")).to_be_visible()  # the held call is stored
        (tmp_path / "gate").touch()
        expect(page.locator("#replay-status")).to_contain_text("finished: 1 turn replayed")
        expect(page.locator("#turn-1 .badge", has_text="response changed")).to_be_visible()
        expect(page.locator('#turn-1 .replay-text[data-side="replay"]')).to_have_text("Held in Oslo.")
        expect(page.locator("#replay-stop")).to_have_count(0)
        assert page.js_errors == []
    finally:
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]


def test_a_session_whose_agent_is_gone_offers_no_replay(page, live_server):
    live_server.call(DjangoSessionService().create_session_sync, app_name="gone_agent", user_id="web", session_id="old")
    session = SessionRow.objects.get(session_id="old")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    expect(page.locator("#replay-origin")).to_be_attached()
    expect(page.locator("#replay-start")).to_have_count(0)
