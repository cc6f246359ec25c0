"""DjangoSessionService against ADK 2.13's session-service contract."""
from __future__ import annotations

import datetime
import socket

import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from pydantic import BaseModel

from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from sessions_app.models import StateChange
from sessions_app.scopes import StateValueError

pytestmark = pytest.mark.django_db(transaction=True)

APP = "my_app"


def text_event(text: str, *, delta: dict | None = None, author: str = "agent", **kwargs) -> Event:
    return Event(
        invocation_id=kwargs.pop("invocation_id", "inv-1"),
        author=author,
        content=types.Content(role="model" if author != "user" else "user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
        **kwargs,
    )


@pytest.mark.django_db
def test_it_is_an_adk_session_service(service):
    assert isinstance(service, BaseSessionService)


async def test_it_creates_with_client_id_and_refuses_a_duplicate(service):
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    assert (session.id, session.app_name, session.user_id, session.events) == ("s1", APP, "u1", [])
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    assert await SessionRow.objects.acount() == 1


async def test_it_generates_an_id_when_none_is_given(service):
    a = await service.create_session(app_name=APP, user_id="u1")
    b = await service.create_session(app_name=APP, user_id="u1")
    assert a.id and b.id and a.id != b.id


async def test_it_splits_initial_state_by_scope_and_drops_temp(service):
    session = await service.create_session(
        app_name=APP,
        user_id="u1",
        state={"app:theme": "dark", "user:name": "Ann", "temp:scratch": 1, "topic": "cats"},
    )
    assert session.state == {"app:theme": "dark", "user:name": "Ann", "topic": "cats"}
    row = await SessionRow.objects.aget(session_id=session.id)
    assert row.state == {"topic": "cats"}
    assert await service.get_user_state(app_name=APP, user_id="u1") == {"name": "Ann"}
    other = await service.create_session(app_name=APP, user_id="u2")
    assert other.state == {"app:theme": "dark"}


async def test_get_session_returns_none_when_missing(service):
    assert await service.get_session(app_name=APP, user_id="u1", session_id="nope") is None


async def test_seed_example_reads_back_without_the_temp_key(service):
    session = await service.create_session(
        app_name=APP, user_id="u1", state={"user:login_count": 0, "task_status": "idle"}
    )
    event = Event(
        invocation_id="inv-login",
        author="system",
        actions=EventActions(
            state_delta={
                "task_status": "active",
                "user:login_count": 1,
                "user:last_login_ts": 1700000000.5,
                "temp:validation_needed": True,
            }
        ),
    )
    await service.append_event(session, event)
    # temp: is visible on the in-memory session for the rest of the invocation ...
    assert session.state["temp:validation_needed"] is True
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    # ... but never stored, neither in state nor in the event.
    assert stored.state == {"task_status": "active", "user:login_count": 1, "user:last_login_ts": 1700000000.5}
    assert "temp:validation_needed" not in stored.events[0].actions.state_delta
    row = await EventRow.objects.aget(session__session_id=session.id)
    assert "temp:validation_needed" not in row.data["actions"]["state_delta"]


async def test_user_state_is_shared_by_one_users_sessions_only(service):
    s1 = await service.create_session(app_name=APP, user_id="ann")
    s2 = await service.create_session(app_name=APP, user_id="ann")
    s3 = await service.create_session(app_name=APP, user_id="bob")
    await service.append_event(s1, text_event("hi", delta={"user:lang": "fr"}))
    assert (await service.get_session(app_name=APP, user_id="ann", session_id=s2.id)).state == {"user:lang": "fr"}
    assert (await service.get_session(app_name=APP, user_id="bob", session_id=s3.id)).state == {}
    assert await service.get_user_state(app_name=APP, user_id="ann") == {"lang": "fr"}
    assert await service.get_user_state(app_name=APP, user_id="bob") == {}


async def test_app_state_is_shared_across_users_but_not_apps(service):
    s1 = await service.create_session(app_name=APP, user_id="ann")
    s2 = await service.create_session(app_name=APP, user_id="bob")
    s3 = await service.create_session(app_name="other_app", user_id="ann")
    await service.append_event(s1, text_event("hi", delta={"app:version": 2}))
    assert (await service.get_session(app_name=APP, user_id="bob", session_id=s2.id)).state == {"app:version": 2}
    assert (await service.get_session(app_name="other_app", user_id="ann", session_id=s3.id)).state == {}


async def test_partial_events_are_returned_and_not_stored(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    partial = text_event("chunk", partial=True)
    assert await service.append_event(session, partial) is partial
    assert session.events == []
    assert await EventRow.objects.acount() == 0


async def test_none_is_stored_and_a_dict_value_replaces(service):
    session = await service.create_session(app_name=APP, user_id="u1", state={"prefs": {"a": 1, "b": 2}, "x": 1})
    await service.append_event(session, text_event("t", delta={"prefs": {"c": 3}, "x": None, "user:y": None}))
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.state == {"prefs": {"c": 3}, "x": None, "user:y": None}


async def test_last_update_time_is_the_events_timestamp(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    event = text_event("t", timestamp=1234567890.123456789)
    await service.append_event(session, event)
    assert session.last_update_time == event.timestamp
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.last_update_time == event.timestamp
    assert stored.events[0].timestamp == event.timestamp


async def test_every_event_field_round_trips_inline_bytes_included(service):
    session = await service.create_session(app_name=APP, user_id="u1", state={"k": "v"})
    events = [
        Event(
            invocation_id="inv-1",
            author="user",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(text="look"),
                    types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff")),
                ],
            ),
        ),
        Event(
            invocation_id="inv-1",
            author="agent",
            branch="agent.sub",
            content=types.Content(
                role="model", parts=[types.Part.from_function_call(name="lookup", args={"q": [1, {"a": None}]})]
            ),
            long_running_tool_ids={"call-1"},
            actions=EventActions(state_delta={"user:n": 1, "app:m": [1, 2]}, transfer_to_agent="sub"),
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=5),
        ),
        Event(invocation_id="inv-1", author="agent", error_code="TOOL_ERROR", error_message="boom"),
    ]
    for event in events:
        await service.append_event(session, event)
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.events == session.events
    assert stored.state == session.state
    assert stored.events[0].content.parts[1].inline_data.data == b"\x89PNG\x00\xff"


async def test_it_behaves_like_adks_in_memory_service(service):
    """The same calls on ADK's reference service and ours give equal sessions."""
    reference = InMemorySessionService()
    results = []
    for svc in (reference, service):
        session = await svc.create_session(app_name=APP, user_id="u1", session_id="same", state={"a": 1, "app:b": 2})
        for i in range(5):
            await svc.append_event(
                session, text_event(f"m{i}", delta={"a": i, f"user:k{i}": i, "temp:t": i}, timestamp=100.0 + i)
            )
        got = await svc.get_session(app_name=APP, user_id="u1", session_id="same")
        recent = await svc.get_session(
            app_name=APP, user_id="u1", session_id="same", config=GetSessionConfig(num_recent_events=2)
        )
        after = await svc.get_session(
            app_name=APP, user_id="u1", session_id="same", config=GetSessionConfig(after_timestamp=103.0)
        )
        results.append((got.state, got.events, [e.id for e in recent.events], [e.id for e in after.events]))
    assert results[0][0] == results[1][0]
    assert [e.model_dump(exclude={"id"}) for e in results[0][1]] == [e.model_dump(exclude={"id"}) for e in results[1][1]]
    assert len(results[1][2]) == 2 and len(results[1][3]) == 2


async def test_get_session_config_limits_events(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    for i in range(10):
        await service.append_event(session, text_event(f"m{i}", timestamp=1000.0 + i))
    get = service.get_session
    recent = await get(app_name=APP, user_id="u1", session_id=session.id, config=GetSessionConfig(num_recent_events=3))
    assert [e.content.parts[0].text for e in recent.events] == ["m7", "m8", "m9"]
    none = await get(app_name=APP, user_id="u1", session_id=session.id, config=GetSessionConfig(num_recent_events=0))
    assert none.events == []
    after = await get(app_name=APP, user_id="u1", session_id=session.id, config=GetSessionConfig(after_timestamp=1008.0))
    assert [e.content.parts[0].text for e in after.events] == ["m8", "m9"]
    with pytest.raises(ValueError):
        GetSessionConfig(num_recent_events=-1)


async def test_list_sessions_oldest_update_first_without_events(service):
    a = await service.create_session(app_name=APP, user_id="ann", state={"user:n": 1})
    b = await service.create_session(app_name=APP, user_id="bob")
    await service.create_session(app_name="other", user_id="ann")
    await service.append_event(a, text_event("newer", timestamp=b.last_update_time + 10))
    listed = (await service.list_sessions(app_name=APP)).sessions
    assert [s.id for s in listed] == [b.id, a.id]
    assert all(s.events == [] for s in listed)
    assert listed[1].state == {"user:n": 1}
    only_ann = (await service.list_sessions(app_name=APP, user_id="ann")).sessions
    assert [s.id for s in only_ann] == [a.id]
    assert (await service.list_sessions(app_name="nothing")).sessions == []


async def test_list_sessions_equals_adks_sqlite_service_on_the_same_calls(service, tmp_path):
    """Same calls to both services, same lists: order, ids, merged state, no events. (Key order within
    one scope is SQLite's in ADK's service, whose `json_patch` reorders keys, and insertion order in ours.)"""
    adk = SqliteSessionService(str(tmp_path / "adk.db"))
    for svc in (adk, service):
        first = await svc.create_session(
            app_name=APP, user_id="ann", session_id="s1", state={"a": 1, "app:k": "v", "user:u": [1, 2], "temp:t": 0}
        )
        await svc.create_session(app_name=APP, user_id="bob", session_id="s2", state={"z": None})
        await svc.create_session(app_name=APP, user_id="cy", session_id="s3")  # a user with no user: state
        await svc.create_session(app_name="other", user_id="ann", session_id="s4", state={"app:k": "other"})
        await svc.append_event(first, text_event("x", delta={"b": {"n": 2}, "user:u": 3, "app:j": 1.5},
                                                 timestamp=first.last_update_time + 5))
    for user_id in (None, "ann", "bob", "nobody"):
        ours = (await service.list_sessions(app_name=APP, user_id=user_id)).sessions
        theirs = (await adk.list_sessions(app_name=APP, user_id=user_id)).sessions
        assert [s.id for s in ours] == [s.id for s in theirs]
        assert [s.state for s in ours] == [s.state for s in theirs]
        assert [(s.app_name, s.user_id, s.events) for s in ours] == [(s.app_name, s.user_id, s.events) for s in theirs]
    assert (await service.list_sessions(app_name="nothing")).sessions == []


async def test_create_session_returns_the_state_adks_sqlite_service_returns(service, tmp_path):
    """The shared states a new session is returned with (read in its own transaction, with the
    scope rows it makes) are ADK's, for a new app, a new user, a known one and a delta of each scope."""
    adk = SqliteSessionService(str(tmp_path / "adk.db"))
    calls = [
        dict(app_name=APP, user_id="ann", session_id="s1", state={"a": 1, "app:k": "v", "user:u": [1, 2]}),
        dict(app_name=APP, user_id="ann", session_id="s2"),
        dict(app_name=APP, user_id="bob", session_id="s3", state={"user:u": "bob's", "b": 2}),
        dict(app_name=APP, user_id="ann", session_id="s4", state={"app:k": "w", "temp:t": 0}),
        dict(app_name="other", user_id="ann", session_id="s5"),
    ]
    for call in calls:
        ours, theirs = await service.create_session(**call), await adk.create_session(**call)
        assert ours.state == theirs.state, call
    with pytest.raises(AlreadyExistsError):
        await service.create_session(**calls[1])
    assert (await service.get_session(app_name=APP, user_id="ann", session_id="s2")).state == {
        "app:k": "w", "user:u": [1, 2]}


async def test_delete_session_removes_it_and_its_events(service):
    session = await service.create_session(app_name=APP, user_id="u1", state={"user:keep": 1})
    await service.append_event(session, text_event("x", delta={"s": 1}))
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    assert await service.get_session(app_name=APP, user_id="u1", session_id=session.id) is None
    assert await EventRow.objects.acount() == 0
    # user state belongs to the user, not the session
    assert await service.get_user_state(app_name=APP, user_id="u1") == {"keep": 1}
    await service.delete_session(app_name=APP, user_id="u1", session_id="never-existed")


async def test_append_to_unknown_session_raises_not_found(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, text_event("x"))


async def test_an_event_for_another_users_session_is_refused(service):
    session = await service.create_session(app_name=APP, user_id="ann")
    impostor = session.model_copy(update={"user_id": "bob"})
    with pytest.raises(SessionNotFoundError):
        await service.append_event(impostor, text_event("x"))
    elsewhere = session.model_copy(update={"app_name": "other_app"})
    with pytest.raises(SessionNotFoundError):
        await service.append_event(elsewhere, text_event("x"))
    assert await EventRow.objects.acount() == 0


async def test_a_stale_writer_gets_stale_session_error(service):
    await service.create_session(app_name=APP, user_id="u1", session_id="s")
    first = await service.get_session(app_name=APP, user_id="u1", session_id="s")
    second = await service.get_session(app_name=APP, user_id="u1", session_id="s")
    await service.append_event(first, text_event("one", delta={"k": 1}))
    await service.append_event(first, text_event("two"))  # the fresh writer goes on
    with pytest.raises(StaleSessionError):
        await service.append_event(second, text_event("late", delta={"k": 2}))
    stored = await service.get_session(app_name=APP, user_id="u1", session_id="s")
    assert stored.state == {"k": 1} and len(stored.events) == 2


async def test_a_hand_built_session_is_checked_by_its_newest_event(service):
    created = await service.create_session(app_name=APP, user_id="u1", session_id="s")
    await service.append_event(created, text_event("one", timestamp=created.last_update_time + 1))
    from google.adk.sessions import Session

    stale = Session(id="s", app_name=APP, user_id="u1", last_update_time=created.last_update_time - 5)
    with pytest.raises(StaleSessionError):
        await service.append_event(stale, text_event("late"))
    fresh = Session(id="s", app_name=APP, user_id="u1", events=list(created.events), last_update_time=0)
    await service.append_event(fresh, text_event("ok"))


async def test_it_records_a_change_row_per_key_and_scope(service):
    session = await service.create_session(app_name=APP, user_id="u1", state={"a": 1, "user:u": "x"})
    await service.append_event(session, text_event("t", delta={"a": 2, "b": None, "user:u": "y", "app:z": True}))
    rows = [
        (c.seq, c.scope, c.key, c.old_value, c.new_value, c.existed_before)
        async for c in StateChange.objects.order_by("id")
    ]
    assert rows == [
        (0, "user", "u", None, "x", False),
        (0, "session", "a", None, 1, False),
        (1, "app", "z", None, True, False),
        (1, "user", "u", "x", "y", True),
        (1, "session", "a", 1, 2, True),
        (1, "session", "b", None, None, False),
    ]


async def test_sequence_numbers_count_up_per_session(service):
    s1 = await service.create_session(app_name=APP, user_id="u1")
    s2 = await service.create_session(app_name=APP, user_id="u1")
    for i in range(3):
        await service.append_event(s1, text_event(f"{i}"))
    await service.append_event(s2, text_event("x"))
    assert [e.seq async for e in EventRow.objects.filter(session__session_id=s1.id).order_by("seq")] == [1, 2, 3]
    assert [e.seq async for e in EventRow.objects.filter(session__session_id=s2.id)] == [1]


class Point(BaseModel):
    x: int


async def test_datetimes_and_pydantic_models_serialise_as_adk_does(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    await service.append_event(session, text_event("t", delta={"when": when, "pt": Point(x=3)}))
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.state == {"when": "2026-01-02T03:04:05Z", "pt": {"x": 3}}
    assert stored.events == session.events


async def test_initial_state_with_datetimes_and_models_is_stored_in_their_json_form(service):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    session = await service.create_session(app_name=APP, user_id="u1", state={"when": when, "user:pt": Point(x=3)})
    stored = await service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.state == {"when": "2026-01-02T03:04:05Z", "user:pt": {"x": 3}}


async def test_a_value_with_no_json_form_is_refused_and_nothing_is_written(service):
    session = await service.create_session(app_name=APP, user_id="u1")
    conn = socket.socket()
    try:
        for bad in (lambda: 1, conn):
            with pytest.raises(StateValueError, match="'user:handle'"):
                await service.append_event(session, text_event("t", delta={"ok": 1, "user:handle": bad}))
    finally:
        conn.close()
    with pytest.raises(StateValueError):
        await service.create_session(app_name=APP, user_id="u1", state={"f": print})
    assert await EventRow.objects.acount() == 0
    assert await StateChange.objects.acount() == 0
    assert await SessionRow.objects.acount() == 1


@pytest.mark.parametrize("app_name,user_id", [("", "u1"), ("app", ""), ("  ", "u1"), ("app", None)])
async def test_empty_names_are_refused(service, app_name, user_id):
    with pytest.raises(ValueError, match="must be a non-empty string"):
        await service.create_session(app_name=app_name, user_id=user_id)
    assert await SessionRow.objects.acount() == 0


@pytest.mark.django_db  # sync: runs on this thread's connection
@pytest.mark.usefixtures("on_commit_callbacks")
def test_the_sync_api_works_without_an_event_loop(service):
    session = service.create_session_sync(app_name=APP, user_id="u1", state={"user:a": 1})
    service.append_event_sync(session, text_event("hi", delta={"b": 2}))
    stored = service.get_session_sync(app_name=APP, user_id="u1", session_id=session.id)
    assert stored.state == {"user:a": 1, "b": 2}
    assert [s.id for s in service.list_sessions_sync(app_name=APP).sessions] == [session.id]
