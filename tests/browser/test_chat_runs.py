"""Chat and runs as a user meets them, in headless chromium: state-only sends,
run options that stay as set, runs whose page is gone, who a failure is
attributed to, what a rewind clears and where a fork came from."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from runtime_app import agents, runs
from sessions_app.keys import SessionKey
from sessions_app.models import AppState, UserState
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from tests.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP = "trip_planner"  # the bundled demo: trip_planner hands weather questions to weather_expert
TEST_AGENTS = Path(__file__).resolve().parent.parent / "runtime_app" / "agents"  # "patient" waits as told


def new_session(live_server, app_name: str = APP, state: dict | None = None) -> SessionRow:
    adk = live_server.call(DjangoSessionService().create_session_sync, app_name=app_name, user_id="web", state=state)
    return SessionRow.objects.select_related("app").get(session_id=adk.id)


def events(row: SessionRow) -> list[EventRow]:
    return list(EventRow.objects.filter(session=row).order_by("seq"))


def open_page(page, live_server, row: SessionRow) -> None:
    page.goto(f"{live_server.url}/sessions/{row.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")


def send(page, message: str) -> None:
    page.fill("#chat-form textarea[name=message]", message)
    page.click("#chat-send")


def replaced(page, action) -> None:
    """Do `action` and wait until the chat form it causes to be re-rendered has been swapped in."""
    page.evaluate("document.getElementById('chat-form').dataset.old = '1'")
    action()
    expect(page.locator("#chat-form[data-old]")).to_have_count(0)


def not_running(key: SessionKey) -> bool:
    return runs.running_invocations(key) == []


@pytest.fixture
def stop_runs_after():
    """Stops what a test's runs left running, so none outlives its test's database."""
    keys: list[SessionKey] = []
    yield keys.append
    for key in keys:
        runs.stop_run(key)
        wait_until(lambda: not_running(key), timeout=15, message=f"a run of {key} did not stop")


@pytest.fixture
def patient(settings, live_server, stop_runs_after):
    """A session of the "patient" agent, which waits as long as it is asked, and a 1 s orphan timeout."""
    settings.ADKUI_AGENTS_DIR = str(TEST_AGENTS)
    settings.ADKUI_ORPHAN_RUN_TIMEOUT = 1
    agents._loader.cache_clear()
    row = new_session(live_server, "patient")
    stop_runs_after(row.key)
    yield row
    agents._loader.cache_clear()


# ---- 1. a state delta alone -------------------------------------------------------------


def test_a_state_delta_alone_updates_state_and_runs_no_agent(page, live_server):
    row = new_session(live_server)
    open_page(page, live_server, row)
    page.click("#chat-form summary")
    page.fill("#chat-form textarea[name=state_delta]", '{"mood": "curious", "user:tier": "gold"}')
    page.click("#chat-send")
    update = page.locator("#event-1")
    expect(update.locator(".author")).to_have_text("user")
    expect(update.locator(".badge", has_text="state")).to_be_visible()
    expect(update.locator(".diff")).to_contain_text("mood")
    expect(update.locator(".diff")).to_contain_text("user:tier")
    expect(page.locator("#state-panel")).to_contain_text("curious")
    expect(page.locator("#chat-form textarea[name=state_delta]")).to_have_value("")  # the panel came back
    expect(page.locator("#chat-status")).not_to_contain_text("running")
    expect(page.locator("#chat-resume")).to_have_count(0)  # a state update is no run to resume
    wait_until(lambda: not_running(row.key))
    [stored] = events(row)  # no run: no agent reply, no second event
    assert stored.author == "user" and stored.invocation_id.startswith("p-") and "content" not in stored.data
    assert stored.data["actions"]["state_delta"] == {"mood": "curious", "user:tier": "gold"}


# ---- 2. the options stay as the user set them ------------------------------------------------


def test_stream_tokens_stays_checked_after_a_resume_and_a_reload(page, live_server, stop_runs_after):
    row = new_session(live_server)
    stop_runs_after(row.key)
    open_page(page, live_server, row)
    streaming = page.locator("#chat-form input[name=streaming]")
    expect(streaming).to_be_checked()
    page.fill("#chat-form input[name=max_llm_calls]", "1")  # weather_expert's model call is over it
    send(page, "What is the weather in Paris?")
    expect(page.locator("#chat-resume")).to_be_visible()  # the invocation ended in an error: resumable
    expect(streaming).to_be_checked()
    replaced(page, lambda: page.click("#chat-resume"))
    expect(streaming).to_be_checked()
    wait_until(lambda: not_running(row.key) and len(events(row)) > 4)  # resumed, and over the limit again
    expect(page.locator("#chat-resume")).to_be_visible()
    expect(streaming).to_be_checked()
    expect(page.locator("#chat-form input[name=max_llm_calls]")).to_have_value("1")
    page.reload()
    expect(page.locator("#chat-form input[name=streaming]")).to_be_checked()
    expect(page.locator("#chat-form input[name=max_llm_calls]")).to_have_value("1")


def test_unticked_stream_tokens_stays_unticked_after_a_resume_and_a_reload(page, live_server, stop_runs_after):
    row = new_session(live_server)
    stop_runs_after(row.key)
    open_page(page, live_server, row)
    page.uncheck("#chat-form input[name=streaming]")
    page.fill("#chat-form input[name=max_llm_calls]", "1")
    send(page, "What is the weather in Paris?")
    expect(page.locator("#chat-resume")).to_be_visible()
    replaced(page, lambda: page.click("#chat-resume"))
    wait_until(lambda: not_running(row.key) and len(events(row)) > 4)
    expect(page.locator("#chat-form input[name=streaming]")).not_to_be_checked()
    page.reload()
    expect(page.locator("#chat-form input[name=streaming]")).not_to_be_checked()


# ---- 3. max LLM calls: visible, 25 by default, checked -----------------------------------------


def test_max_llm_calls_is_visible_at_25_and_a_bad_value_is_named(page, live_server):
    row = new_session(live_server)
    open_page(page, live_server, row)
    field = page.locator("#chat-form input[name=max_llm_calls]")
    expect(field).to_be_visible()  # not tucked away in a <details>
    expect(field).to_have_value("25")
    field.fill("0")
    send(page, "Hi")
    expect(page.locator("#chat-panel .errorlist")).to_have_text("max LLM calls must be a whole number from 1 to 1000.")
    expect(page.locator("#chat-form textarea[name=message]")).to_have_value("Hi")
    assert events(row) == []


# ---- 4. a run whose page is gone stops --------------------------------------------------------------


def test_a_run_stops_after_its_last_viewer_closed_the_page(page, live_server, patient):
    viewer = page.context.new_page()  # the one closed; `page` stays, blank, for a failure's screenshot
    open_page(viewer, live_server, patient)
    send(viewer, "wait 300")
    expect(viewer.locator("#chat-status")).to_contain_text("running")
    wait_until(lambda: any(e.has_function_call for e in events(patient)))  # the tool is waiting
    viewer.close()
    # 1 s after the page went (and a poll or two): not 300 s.
    wait_until(lambda: not_running(patient.key), timeout=30, message="the orphaned run went on")
    stored = events(patient)
    assert stored[-1].data.get("error_code") == "INVOCATION_ABORTED" or stored[-1].has_function_response
    assert not any("Done waiting" in str(e.data.get("content")) for e in stored)


def test_a_run_goes_on_while_a_viewer_is_there(page, live_server, patient):
    open_page(page, live_server, patient)
    send(page, "wait 3")  # three times the orphan timeout
    expect(page.locator("#timeline .event", has_text="Done waiting.")).to_be_visible(timeout=15_000)
    assert not any(e.data.get("error_code") for e in events(patient))


def test_keep_running_when_i_leave_lets_the_run_finish(page, live_server, patient):
    viewer = page.context.new_page()
    open_page(viewer, live_server, patient)
    viewer.check("#chat-form input[name=keep_running]")
    send(viewer, "wait 3")
    expect(viewer.locator("#chat-status")).to_contain_text("running")
    viewer.close()
    wait_until(lambda: not_running(patient.key), timeout=30)
    stored = events(patient)
    assert "Done waiting." in str(stored[-1].data.get("content"))
    assert not any(e.data.get("error_code") for e in stored)


# ---- 5. the error names the agent that failed ----------------------------------------------------


def test_an_llm_call_limit_error_is_attributed_to_the_agent_that_ran_over(page, live_server, stop_runs_after):
    row = new_session(live_server)
    stop_runs_after(row.key)
    open_page(page, live_server, row)
    page.fill("#chat-form input[name=max_llm_calls]", "1")
    send(page, "What is the weather in Paris?")
    error = page.locator("#timeline .event.is-error")
    expect(error.locator(".badge.error")).to_contain_text("LlmCallsLimitExceededError")
    expect(error.locator(".author")).to_have_text("weather_expert")
    expect(page.locator("#timeline .event .badge", has_text="→ weather_expert")).to_be_visible()  # trip_planner handed over


# ---- 6. rewind says which initial keys it clears --------------------------------------------------


def test_the_rewind_preview_names_the_initial_keys_adk_will_clear(page, live_server, stop_runs_after):
    row = new_session(live_server, state={"trip_budget": 1200, "user:name": "Ann"})
    stop_runs_after(row.key)
    open_page(page, live_server, row)
    send(page, "Please plan a trip to Lisbon")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_be_visible()
    page.locator("#event-1 button", has_text="rewind").click()
    warning = page.locator("#rewind-initial-cleared")
    expect(warning).to_contain_text("Initial state cleared: trip_budget.")
    expect(warning).to_contain_text("initial state")
    expect(warning).to_contain_text("state deltas only")
    expect(warning).not_to_contain_text("destination")  # set by the undone invocation: cleared, as expected
    page.click("#rewind-confirm")
    expect(page.locator("#rewind-card")).to_contain_text("Rewound")
    assert DjangoSessionService().get_session_sync(app_name=APP, user_id="web", session_id=row.session_id).state[
        "trip_budget"] is None  # what the preview said


# ---- 7. a fork continues the history, and both sessions say so -----------------------------------


def test_a_fork_continues_the_history_and_links_both_ways(page, live_server, stop_runs_after):
    source = new_session(live_server, state={"trip_budget": 900})
    stop_runs_after(source.key)
    open_page(page, live_server, source)
    send(page, "Please plan a trip to Oslo")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_be_visible()
    send(page, "Please plan a trip to Kyoto")
    expect(page.locator("#timeline .event", has_text="Done! Your trip is planned.")).to_have_count(2)
    shared = (AppState.objects.get(app=source.app).state, UserState.objects.get(app=source.app, user_id="web").state)

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.locator("#event-4 button", has_text="fork").click()
    # Asked in the page, as rewind asks: what the fork gets, then Fork or Cancel.
    card = page.locator("#fork-card")
    expect(card).to_contain_text("Fork at #4?")
    expect(card.locator("tr", has_text="destination")).to_contain_text("Oslo")
    card.get_by_role("button", name="Cancel").click()
    expect(card).to_have_count(0)
    page.locator("#event-4 button", has_text="fork").click()
    page.locator("#fork-confirm").click()
    expect(page.locator("#forked-from")).to_have_text(re.compile(rf"^Forked from\s+{source.session_id}\s+at #4\s*$"))
    assert dialogs == []
    fork = SessionRow.objects.get(forked_from=source)
    expect(page).to_have_url(f"{live_server.url}/sessions/{fork.pk}/")
    expect(page.locator("#timeline .event:not(.session-start)")).to_have_count(4)
    expect(page.locator("#event-4")).to_contain_text("Done! Your trip is planned.")
    # The model calls behind the copied events came along: the header counts them, as the health line does.
    expect(page.locator("#inspector-totals")).to_contain_text("model call")
    expect(page.locator("#inspector-totals")).not_to_contain_text("no model calls recorded")
    # The session state as of #4 (Oslo, not Kyoto); user: state is the shared one, as for any session.
    expect(page.locator('#state-panel tr[data-key="destination"]')).to_contain_text("Oslo")
    expect(page.locator('#state-panel tr[data-key="trip_budget"]')).to_contain_text("900")
    expect(page.locator('#state-panel tr[data-key="user:last_destination"]')).to_contain_text("Kyoto")
    assert [(e.event_id, e.author, e.invocation_id, e.timestamp) for e in events(fork)] == [
        (e.event_id, e.author, e.invocation_id, e.timestamp) for e in events(source)[:4]]
    assert (AppState.objects.get(app=source.app).state, UserState.objects.get(app=source.app, user_id="web").state) == shared

    page.locator("#forked-from a", has_text=source.session_id).click()
    expect(page.locator("#session-forks")).to_contain_text(f"1 fork: {fork.session_id} at #4")
    page.locator("#session-forks a", has_text=fork.session_id).click()
    expect(page.locator("#live-label")).to_have_text("live")
    send(page, "Please plan a trip to Paris")  # the fork runs on from its own history
    expect(page.locator("#event-8")).to_contain_text("Done! Your trip is planned.")
