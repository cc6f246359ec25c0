"""Chat and runs, server side: state-only sends, run options, the viewer signal,
error authors, rewind's cleared initial keys and forks that continue the history."""
from __future__ import annotations

import re
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings as django_settings
from django.template.loader import render_to_string
from google.adk.events import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types

from adkui.adk import DjangoSessionService
from adkui.settings import redis_channel_layer
from runtime_app import runners, runs
from runtime_app.demo_agents.trip_planner.agent import root_agent as trip_planner
from runtime_app.forms import DEFAULT_MAX_LLM_CALLS
from sessions_app import broadcast as session_broadcast
from sessions_app import selectors, services
from sessions_app.broadcast import session_group
from sessions_app.keys import SessionKey
from sessions_app.models import AppState, StateChange, UserState
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from tests.conftest import close_worker_connections

APP = "trip_planner"  # the bundled demo agent: trip_planner hands weather questions to weather_expert


def turn(key: SessionKey, text: str, **options) -> runs.RunRequest:
    return runs.RunRequest(key=key, new_message=types.Content(role="user", parts=[types.Part(text=text)]), **options)


def run_turn(key: SessionKey, text: str, **options) -> runs.AgentRun:
    run = runs.run_agent(turn(key, text, **options))

    async def go() -> None:
        async for _ in run:
            pass

    async_to_sync(go)()
    close_worker_connections()
    return run


@pytest.fixture
def demo(service):
    """A trip_planner session with initial state in every scope and two finished invocations."""
    session = service.create_session_sync(
        app_name=APP, user_id="ann", state={"trip_budget": 100, "user:name": "Ann", "app:season": "spring"}
    )
    row = SessionRow.objects.select_related("app").get(session_id=session.id)
    run_turn(row.key, "Hi there!")
    run_turn(row.key, "Please plan a trip to Oslo")
    row.refresh_from_db()
    return row


def field(html: str, name: str) -> str:
    """The <input> of form field `name` in the page."""
    match = re.search(rf'<input[^>]*name="{name}"[^>]*>', html)
    assert match, f"no {name} field"
    return match.group(0)


def post_chat(client, row: SessionRow, **data):
    return client.post(f"/sessions/{row.pk}/chat/", {"max_llm_calls": DEFAULT_MAX_LLM_CALLS, **data})


# ---- 1. a state delta alone ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_state_delta_alone_is_one_user_event_and_runs_nothing(client, demo):
    before = demo.revision
    response = post_chat(client, demo, message="  ", state_delta='{"mood": "happy", "user:tier": "gold", "temp:x": 1}')
    assert response.status_code == 200 and "form-error" not in response.content.decode()
    assert "the agent is running" not in response.content.decode()
    [event] = selectors.event_page(demo, after_seq=before)  # one event: nothing ran
    _, adk = event
    assert adk.author == "user" and adk.content is None and adk.invocation_id.startswith("p-")
    assert adk.actions.state_delta == {"mood": "happy", "user:tier": "gold"}  # temp: is never stored
    assert adk.actions.model_dump(exclude_defaults=True, exclude_none=True) == {"state_delta": {"mood": "happy", "user:tier": "gold"}}
    state = selectors.current_state(SessionRow.objects.get(pk=demo.pk))
    assert state.session["mood"] == "happy" and state.user["tier"] == "gold"
    assert runs.running_invocations(demo.key) == []


@pytest.mark.django_db(transaction=True)
def test_a_state_update_is_no_run_to_resume_and_hides_no_earlier_one(client, demo):
    post_chat(client, demo, state_delta='{"mood": "happy"}')
    assert selectors.resumable_invocation(demo) is None
    assert 'id="chat-resume"' not in client.get(f"/sessions/{demo.pk}/").content.decode()
    # A run that stopped right after the user's message, then a state update: that run is still resumable.
    said = AdkEvent(author="user", invocation_id="e-stopped", content=types.Content(role="user", parts=[types.Part(text="hi")]))
    services.event_append(key=demo.key, event=said)
    post_chat(client, demo, state_delta='{"mood": "tired"}')
    assert selectors.resumable_invocation(demo) == "e-stopped"
    assert 'name="invocation_id" value="e-stopped"' in client.get(f"/sessions/{demo.pk}/").content.decode()


@pytest.mark.django_db
def test_a_state_delta_of_temp_keys_alone_is_refused_and_writes_nothing(client, demo):
    response = post_chat(client, demo, state_delta='{"temp:scratch": 1}')
    assert "temp: keys live only during a run" in response.content.decode()
    assert EventRow.objects.filter(session=demo).count() == demo.revision


# ---- 2. and 3. run options: visible, validated, kept ----------------------------------------


@pytest.mark.django_db
def test_the_page_shows_max_llm_calls_at_its_default_and_the_keep_running_choice(client, demo):
    html = client.get(f"/sessions/{demo.pk}/").content.decode()
    assert f'value="{DEFAULT_MAX_LLM_CALLS}"' in field(html, "max_llm_calls")
    assert " checked" in field(html, "streaming") and " checked" not in field(html, "keep_running")
    assert "keep running when I leave" in html


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["0", "-3", "abc", "", "1001", "2.5"])
def test_a_bad_max_llm_calls_is_a_form_error_naming_the_field(client, demo, value):
    response = client.post(f"/sessions/{demo.pk}/chat/", {"message": "hi", "max_llm_calls": value})
    assert response.status_code == 200
    assert "max LLM calls must be a whole number from 1 to 1000." in response.content.decode()
    assert EventRow.objects.filter(session=demo).count() == demo.revision


@pytest.mark.django_db(transaction=True)
def test_the_options_of_a_send_stay_for_the_page_the_stop_and_the_resume(client, demo):
    post_chat(client, demo, state_delta='{"mood": "calm"}', max_llm_calls="7", keep_running="on")  # streaming unticked
    page = client.get(f"/sessions/{demo.pk}/").content.decode()
    assert 'value="7"' in field(page, "max_llm_calls")
    assert " checked" not in field(page, "streaming") and " checked" in field(page, "keep_running")

    # The stop button carries the options as they are now (its hx-include); they stay.
    stop = client.post(f"/sessions/{demo.pk}/chat/stop/", {"streaming": "on", "max_llm_calls": "9"}).content.decode()
    assert " checked" in field(stop, "streaming") and 'value="9"' in field(stop, "max_llm_calls")
    assert " checked" not in field(stop, "keep_running")  # sent, unticked
    page = client.get(f"/sessions/{demo.pk}/").content.decode()
    assert " checked" in field(page, "streaming") and 'value="9"' in field(page, "max_llm_calls")


def test_a_resume_form_carries_the_chat_forms_options():
    html = render_to_string("runtime_app/partials/chat_status.html",
                            {"session": SessionRow(pk=1), "unfinished": "e-1", "has_agent": True})
    assert 'name="invocation_id" value="e-1"' in html and 'hx-include="#chat-options input"' in html


# ---- 4. who is watching ------------------------------------------------------------------


async def test_a_session_is_watched_while_its_group_has_a_member():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    assert not await session_broadcast.watched(424242)
    await layer.group_add(session_group(424242), channel)
    assert await session_broadcast.watched(424242)
    await layer.group_discard(session_group(424242), channel)
    assert not await session_broadcast.watched(424242)


@pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs REDIS_URL: the Redis channel layer keeps groups in Redis")
async def test_on_redis_a_viewer_on_any_worker_counts(settings):
    # A layer of this test's own (its own key prefix), standing in for another worker's.
    prefix = f"adkui-test-{uuid.uuid4().hex}"
    layer_config = redis_channel_layer(settings.REDIS_URL)
    layer_config["CONFIG"]["prefix"] = prefix
    settings.CHANNEL_LAYERS = {"default": layer_config}
    layer = get_channel_layer()
    channel = await layer.new_channel()
    assert not await session_broadcast.watched(7)
    await layer.group_add(session_group(7), channel)
    assert await session_broadcast.watched(7)
    await layer.group_discard(session_group(7), channel)
    assert not await session_broadcast.watched(7)
    await layer.flush()


# ---- 5. the error of a sub-agent is the sub-agent's --------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_sub_agent_over_max_llm_calls_is_the_author_of_the_error(service):
    session = service.create_session_sync(app_name=APP, user_id="ann")
    key = SessionKey(APP, "ann", session.id)
    # trip_planner's one allowed model call hands over; weather_expert's first call is over the limit.
    run = run_turn(key, "What is the weather in Paris?", max_llm_calls=1)
    assert run.error is not None
    error = EventRow.objects.get(session__session_id=session.id, error_code__isnull=False)
    assert error.author == "weather_expert" and "llm calls limit of `1`" in error.data["error_message"]
    assert error.data["node_info"]["path"].endswith("/weather_expert@1")
    assert EventRow.objects.filter(session__session_id=session.id, author="trip_planner").exists()


def test_failing_agent_names_an_agent_of_the_app_only():
    assert runners.failing_agent(trip_planner, "trip_planner@1/weather_expert@1") == "weather_expert"
    assert runners.failing_agent(trip_planner.sub_agents[0], "trip_planner@1") == "trip_planner"
    assert runners.failing_agent(trip_planner, "trip_planner@1/some_function@2") is None
    assert runners.failing_agent(trip_planner, "") is None


# ---- 6. rewind names the initial keys it clears --------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_rewind_preview_names_initial_keys_adk_clears(client, demo):
    plan = EventRow.objects.filter(session=demo, has_function_call=True).first()
    html = client.get(f"/sessions/{demo.pk}/rewind/?seq={plan.seq}").content.decode()
    assert 'id="rewind-initial-cleared"' in html
    cleared = html.split('id="rewind-initial-cleared"', 1)[1].split("</div>", 1)[0]
    # trip_budget came with the session; destination came with the undone invocation.
    assert "<code>trip_budget</code>" in cleared and "destination" not in cleared
    assert "initial state" in cleared and "state deltas only" in cleared


@pytest.mark.django_db(transaction=True)
def test_rewind_preview_of_a_session_without_initial_state_has_no_such_warning(client, service):
    session = service.create_session_sync(app_name=APP, user_id="ann")
    row = SessionRow.objects.select_related("app").get(session_id=session.id)
    run_turn(row.key, "Please plan a trip to Oslo")
    html = client.get(f"/sessions/{row.pk}/rewind/?seq=1").content.decode()
    assert "Rewind to before invocation" in html and 'id="rewind-initial-cleared"' not in html


# ---- 7. a fork continues the history -----------------------------------------------------------


def shared_state(row: SessionRow) -> tuple[dict, dict]:
    return (AppState.objects.get(app=row.app).state, UserState.objects.get(app=row.app, user_id=row.user_id).state)


@pytest.mark.django_db(transaction=True)
def test_a_fork_copies_the_events_up_to_n_and_their_session_state(demo):
    # Shared state moves on after the fork point: the fork must not write it back.
    run_turn(demo.key, "Please plan a trip to Lisbon")
    demo.refresh_from_db()
    shared_before = shared_state(demo)
    shared_changes = StateChange.objects.exclude(scope="session").count()
    n = EventRow.objects.filter(session=demo, author="trip_planner", is_final_response=True).order_by("seq")[1].seq

    fork = services.session_fork(session=demo, seq=n)

    assert fork.forked_from == demo and fork.forked_at_seq == n and fork.revision == n
    assert fork.user_id == demo.user_id and fork.app_id == demo.app_id and fork.session_id != demo.session_id
    source = [e for _, e in selectors.event_page(demo, limit=n)]
    copied = [e for _, e in selectors.event_page(fork)]
    same = ("id", "author", "invocation_id", "timestamp", "content")
    assert [[getattr(e, f) for f in same] for e in copied] == [[getattr(e, f) for f in same] for e in source]
    assert [e.actions.state_delta for e in copied] == [
        {k: v for k, v in e.actions.state_delta.items() if not k.startswith(("app:", "user:"))} for e in source
    ]
    # Session state as of every copied event is the source's; app and user state are the shared ones, untouched.
    for seq in range(n + 1):
        assert selectors.state_as_of(fork, seq).session == selectors.state_as_of(demo, seq).session, seq
    assert fork.state["destination"] == "Oslo" and selectors.current_state(demo).session["destination"] == "Lisbon"
    assert shared_state(demo) == shared_before and StateChange.objects.exclude(scope="session").count() == shared_changes


@pytest.mark.django_db(transaction=True)
def test_the_agent_goes_on_from_the_forks_history(demo):
    fork = services.session_fork(session=demo, seq=demo.revision)
    copied = [e.id for _, e in selectors.event_page(fork)]
    run = run_turn(fork.key, "Please plan a trip to Kyoto")
    assert run.error is None
    adk = DjangoSessionService().get_session_sync(app_name=APP, user_id="ann", session_id=fork.session_id)
    assert [e.id for e in adk.events[: len(copied)]] == copied and len(adk.events) == len(copied) + 4
    # user: state is the shared one: the source's Oslo trip is counted once, the fork's own trip adds one.
    assert adk.state["destination"] == "Kyoto" and adk.state["user:trips_planned"] == 2


@pytest.mark.django_db(transaction=True)
def test_a_fork_that_cannot_copy_an_event_leaves_nothing(demo):
    # A stored event the write path now refuses (written before its limits, or by hand):
    # the whole fork rolls back with it, session and all.
    bad = AdkEvent(author="x" * 300, invocation_id="inv-bad", actions=EventActions())
    services.event_append(key=demo.key, event=AdkEvent(author="ok", invocation_id="inv-ok"))
    EventRow.objects.filter(session=demo, author="ok").update(data=bad.model_dump(mode="json", exclude_none=True))
    sessions = SessionRow.objects.count()
    with pytest.raises(ValueError):
        services.session_fork(session=demo, seq=demo.revision + 1)
    assert SessionRow.objects.count() == sessions


@pytest.mark.django_db(transaction=True)
def test_the_fork_says_where_it_came_from_and_the_source_lists_its_forks(client, demo):
    fork = services.session_fork(session=demo, seq=2)
    fork_page = client.get(f"/sessions/{fork.pk}/").content.decode()
    origin = fork_page.split('id="session-origin"', 1)[1].split("</div>", 1)[0]
    assert demo.session_id in origin and f"/sessions/{demo.pk}/?at=2" in origin and "#2" in origin
    source_page = client.get(f"/sessions/{demo.pk}/").content.decode()
    forks = source_page.split('id="session-forks"', 1)[1].split("</span>", 1)[0]
    assert "1 fork:" in forks and fork.session_id in forks and f"/sessions/{fork.pk}/" in forks
    SessionRow.objects.filter(pk=demo.pk).delete()
    assert "a session since deleted, at #2" in client.get(f"/sessions/{fork.pk}/").content.decode()
