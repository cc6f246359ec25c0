"""Edit and continue in headless chromium, on the demo session: the issue's "done when"."""
from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from eval_app.models import EvalCase
from inspector_app.models import ModelCall
from runtime_app import agents
from runtime_app.demo import DEMO_APP
from sessions_app import selectors
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from tests.browser.test_csp import demo  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HANDOFF = "hand weather questions to weather_expert"


def _handoff_call(session: SessionRow) -> tuple[ModelCall, EventRow]:
    """The model call that handed "What is the weather in Lisbon?" to weather_expert, and its event."""
    user = EventRow.objects.get(session=session, author="user", data__content__parts__0__text="What is the weather in Lisbon?")
    call = ModelCall.objects.for_invocation(session, user.invocation_id).first()
    return call, EventRow.objects.get(session=session, event_id=call.event_id)


def _state(session: SessionRow) -> Any:
    return selectors.state_as_of(session, SessionRow.objects.get(pk=session.pk).revision)


def test_an_edited_handoff_instruction_continues_in_a_fork_that_takes_another_path(page, live_server, demo):  # noqa: F811
    original = SessionRow.objects.get(pk=demo)
    call, event = _handoff_call(original)
    assert call.agent_name == "trip_planner" and "transfer_to_agent" in str(event.data)
    original_events, original_state = EventRow.objects.filter(session=original).count(), _state(original)

    page.goto(f"{live_server.url}/sessions/{original.pk}/")
    page.locator(f"#event-{event.seq} button", has_text="inspect").click()
    expect(page.locator("#inspector")).to_contain_text("Model call")
    page.locator("#inspector #edit-and-continue").click()

    expect(page).to_have_url(re.compile(rf"/model-calls/{call.pk}/edit/$"))
    instruction = page.locator("#edit-system-instruction")
    expect(instruction).to_have_value(re.compile(HANDOFF))
    expect(page.locator("#edit-placeholders")).to_contain_text("{user:name?}")
    instruction.fill(instruction.input_value().replace(HANDOFF, "answer weather questions by planning a trip"))
    page.click("#edit-continue")

    # The fork's page, which streams the continued run.
    expect(page.locator("#edit-origin")).to_contain_text("system instruction")
    fork = SessionRow.objects.get(forked_from=original, edited_call_pk=call.pk)
    assert page.url.endswith(f"/sessions/{fork.pk}/")
    # Pushed live: the copied turn's answer, then the continued turn's (the planner planned instead of handing over).
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_have_count(2)
    expect(page.locator("#chat-status")).not_to_contain_text("running")

    # The other path, proven by the scripted models' call logs: only the edited call and the one after it
    # reached a model: the planner's with the edited instruction, then its live follow-up on plan_trip's
    # result (today's code: its own instruction again); the weather expert was never asked.
    root = agents.load(DEMO_APP).root
    edited, follow_up = root.model.calls
    assert "answer weather questions by planning a trip" in edited.config.system_instruction
    assert HANDOFF not in edited.config.system_instruction
    assert follow_up.contents[-1].parts[0].function_response.name == "plan_trip"
    assert root.find_agent("weather_expert").model.calls == []
    planner_calls = [edited, follow_up]

    page.click("#edit-compare")
    expect(page).to_have_url(re.compile(rf"/sessions/{fork.pk}/edited/$"))
    expect(page.locator("#replay-status")).to_contain_text("finished")
    turn = page.locator("#turn-3")
    expect(turn.locator(".badge", has_text="tools changed")).to_be_visible()
    expect(turn.locator(".badge", has_text="response changed")).to_be_visible()
    expect(turn.locator(".badge", has_text="state changed")).to_be_visible()
    expect(turn).to_contain_text("plan_trip")
    expect(turn).to_contain_text("get_weather")
    expect(turn.locator(".replay-shared")).to_contain_text("trips_planned")
    expect(page.locator('#edit-totals tr[data-side="fork"] .calls')).to_have_text(str(len(planner_calls)))
    assert page.js_errors == []

    # The original, and the user: and app: state it shares, are untouched; the fork is found by its label.
    assert EventRow.objects.filter(session=original).count() == original_events
    assert _state(original) == original_state
    assert _state(fork).user["trips_planned"] == original_state.user["trips_planned"] + 1
    page.goto(f"{live_server.url}/apps/{DEMO_APP}/?q=system+instruction")
    expect(page.locator(f'a[href="/sessions/{fork.pk}/"]').first).to_be_visible()

    # An ordinary session: its page adds it as an eval case of the agent, with the continued turn.
    page.goto(f"{live_server.url}/sessions/{fork.pk}/")
    form = page.locator("form.add-to-eval-set").first
    form.locator("input[name=new_eval_set_id]").fill("what_if")
    form.locator("input[name=eval_id]").fill("weather_planned_instead")
    form.get_by_role("button", name="Add").click()
    expect(page.locator(".add-to-eval-set.done")).to_contain_text("Added case")
    case = EvalCase.objects.get(eval_set__app_name=DEMO_APP, eval_id="weather_planned_instead")
    assert "plan_trip" in str(case.data) and "transfer_to_agent" not in str(case.data)
