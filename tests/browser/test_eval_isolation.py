"""Eval isolation in headless chromium: the "show eval sessions" filter, the sandbox badge of an
eval run's session, and "add to eval set" from one event of a session with the state as of that
event proposed as the expected final state, edited, saved and shown by the case editor."""
from __future__ import annotations

import json
import re

import pytest
from google.adk.events import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from eval_app.models import EvalCase, EvalRun, EvalSet
from sessions_app.models import Session as SessionRow
from sessions_app.sandbox import sandbox_app_name

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP = "trip_planner"


def user_event(text: str, invocation_id: str) -> AdkEvent:
    return AdkEvent(author="user", invocation_id=invocation_id,
                    content=types.Content(role="user", parts=[types.Part(text=text)]))


def reply(text: str, invocation_id: str, delta: dict) -> AdkEvent:
    return AdkEvent(author=APP, invocation_id=invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                    actions=EventActions(state_delta=delta))


def make_session(app_name: str, session_id: str, state: dict, events: list[AdkEvent]) -> None:
    service = DjangoSessionService()
    session = service.create_session_sync(app_name=app_name, user_id="ann", session_id=session_id, state=state)
    for event in events:
        service.append_event_sync(session, event)


@pytest.fixture
def run(live_server) -> EvalRun:
    eval_set = EvalSet.objects.create(app_name=APP, eval_set_id="trips")
    return EvalRun.objects.create(eval_set=eval_set, app_name=APP, status=EvalRun.COMPLETED)


def test_eval_sessions_filter_badge_and_a_case_from_an_event(page, live_server, run):
    live_server.call(make_session, APP, "mine", {"topic": "cats", "user:name": "Ann"}, [
        user_event("hi", "i-1"), reply("hello", "i-1", {"topic": "dogs", "app:plan": "pro"}),
        user_event("again", "i-2"), reply("bye", "i-2", {"topic": "birds"}),
    ])
    sandbox = sandbox_app_name(APP, f"eval-{run.pk}")
    live_server.call(make_session, sandbox, "evalcase", {}, [user_event("Plan Lisbon", "e-1")])

    # The filter: eval sessions are hidden until asked for.
    page.goto(f"{live_server.url}/apps/{APP}/")
    rows = page.locator("#session-rows")
    expect(rows).to_contain_text("mine")
    expect(rows).not_to_contain_text("evalcase")
    page.get_by_label("show eval sessions").check()
    page.locator("#session-filters").get_by_role("button", name="Apply").click()
    expect(rows.locator(".sandbox-mark")).to_have_text(f"eval run {run.pk}")
    expect(page).to_have_url(re.compile(r"[?&]eval=1(&|$)"))  # the filter is in the address

    # The sandbox session's page says whose it is and links back to the run.
    rows.get_by_role("link", name="evalcase").click()
    badge = page.locator("#sandbox-badge").get_by_role("link", name=f"eval sandbox of run {run.pk}")
    expect(badge).to_have_attribute("href", f"/evals/runs/{run.pk}/")
    expect(page.locator("#chat-form")).to_be_visible()

    # Add to eval set from event #2 of the developer's session, editing the proposed final state.
    mine = SessionRow.objects.get(app__name=APP, session_id="mine")
    page.goto(f"{live_server.url}/sessions/{mine.pk}/")
    page.locator("#event-2").get_by_role("button", name="eval case").click()
    dialog = page.locator("#side-dialog")
    expect(dialog).to_contain_text("Add to eval set up to #2")
    final = dialog.get_by_label("Expected final state")
    proposed = json.loads(final.input_value())
    assert proposed == {"topic": "dogs", "user:name": "Ann", "app:plan": "pro"}
    final.fill(json.dumps({**proposed, "topic": "wolves"}))
    dialog.get_by_label("or new").fill("from_events")
    dialog.get_by_label("Case id").fill("mine_at_2")
    dialog.get_by_role("button", name="Add").click()
    expect(dialog).to_contain_text("Added case mine_at_2 (1 turn)")

    dialog.get_by_role("link", name="edit").click()
    editor = page.get_by_label("Expected final state")
    expect(editor).to_be_visible()
    assert json.loads(editor.input_value()) == {"topic": "wolves", "user:name": "Ann", "app:plan": "pro"}
    case = EvalCase.objects.get(eval_id="mine_at_2")
    assert case.data["session_input"]["state"] == {"topic": "cats", "user:name": "Ann"}
    assert not page.js_errors
