"""The run service: one turn of an agent, its failures, stopping and resuming."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from google.genai import types

from runtime_app import runs
from sessions_app.models import Event
from sessions_app.keys import SessionKey

pytestmark = pytest.mark.django_db(transaction=True)

APP = "trip_planner"


def text_of(event) -> str:
    return "".join(p.text or "" for p in (event.content.parts if event.content else []) or [])


async def new_key(service, app_name: str = APP) -> SessionKey:
    session = await service.create_session(app_name=app_name, user_id="ann")
    return SessionKey(app_name, "ann", session.id)


def turn(key: SessionKey, text: str, **options) -> runs.RunRequest:
    return runs.RunRequest(key=key, new_message=types.Content(role="user", parts=[types.Part(text=text)]), **options)


async def stored(key: SessionKey) -> list[Event]:
    return [e async for e in Event.objects.filter(session__session_id=key.session_id).order_by("seq")]


async def test_streaming_yields_token_chunks_that_are_not_stored(service):
    key = await new_key(service)
    events = [e async for e in runs.run_agent(turn(key, "Hi", streaming=True))]
    assert [e.partial for e in events] == [True, True, True, False]
    assert "".join(text_of(e) for e in events[:-1]) == text_of(events[-1])
    assert [e.author for e in await stored(key)] == ["user", "trip_planner"]
    assert (await stored(key))[1].event_id == events[-1].id


async def test_without_streaming_it_yields_whole_events_of_one_invocation(service):
    key = await new_key(service)
    events = [e async for e in runs.run_agent(turn(key, "Please plan a trip to Lisbon"))]
    assert [bool(e.get_function_calls()) for e in events] == [True, False, False]
    assert bool(events[1].get_function_responses()) and len(events) == 3 and not any(e.partial for e in events)
    assert len({e.invocation_id for e in events}) == 1
    assert text_of(events[-1]) == "Done! Your trip is planned."


async def test_a_stopped_invocation_is_sealed_and_resumes_by_its_id(service):
    key = await new_key(service)
    seen_running: list[list[str | None]] = []
    first: list = []
    async for event in runs.run_agent(turn(key, "Plan a trip to Oslo")):
        first.append(event)
        seen_running.append(runs.running_invocations(key))
        assert runs.stop_run(key) == 1
    invocation_id = first[0].invocation_id
    assert seen_running[0] == [invocation_id]
    assert first[-1].error_code == "INVOCATION_ABORTED"  # ADK seals the dangling call
    assert runs.running_invocations(key) == [] and runs.stop_run(key) == 0

    resumed = [e async for e in runs.run_agent(runs.RunRequest(key=key, invocation_id=invocation_id))]
    assert [e.invocation_id for e in resumed] == [invocation_id]
    assert text_of(resumed[-1]) == "Done! Your trip is planned."


async def test_stop_run_works_from_another_thread(service):
    key = await new_key(service)
    events = []
    async for event in runs.run_agent(turn(key, "Plan a trip to Kyoto")):
        events.append(event)
        if len(events) == 1:
            stopper = threading.Thread(target=runs.stop_run, args=(key,))
            stopper.start()
            stopper.join()
    assert events[-1].error_code == "INVOCATION_ABORTED"


async def test_closing_the_iteration_early_aborts_the_invocation(service):
    key = await new_key(service)
    iterator = aiter(runs.run_agent(turn(key, "Plan a trip to Paris")))
    call = await anext(iterator)
    await iterator.aclose()  # a client that went away
    rows = await stored(key)
    assert rows[-1].invocation_id == call.invocation_id and rows[-1].has_function_response  # the sealed call
    assert runs.running_invocations(key) == []


class ExplodingRunner:
    """Fails where ADK records nothing itself (outside any agent node)."""

    def __init__(self, service) -> None:
        self.agent = SimpleNamespace(name="exploder")
        self.session_service = service

    async def run_async(self, **kwargs):
        raise ConnectionError("the database went away")
        yield  # pragma: no cover - makes this an async generator


async def test_an_exception_adk_did_not_record_becomes_a_final_stored_agent_error(service):
    key = await new_key(service)
    run = runs.run_agent(turn(key, "hi"), runner=ExplodingRunner(service))
    [event] = [e async for e in run]
    assert isinstance(run.error, ConnectionError)
    assert event.author == "exploder" and event.error_code == runs.AGENT_ERROR
    assert event.error_message == "ConnectionError: the database went away"
    [row] = await stored(key)
    assert row.event_id == event.id and row.error_code == runs.AGENT_ERROR


async def test_an_agent_that_cannot_be_loaded_ends_with_an_error_event(service):
    key = await new_key(service, app_name="no_such_agent")
    run = runs.run_agent(turn(key, "hi"))
    [event] = [e async for e in run]
    assert event.author == "no_such_agent" and event.error_code == runs.AGENT_ERROR
    assert "AgentNotFound" in event.error_message and len(await stored(key)) == 1


async def test_an_error_in_a_deleted_session_is_still_yielded(service):
    key = await new_key(service)
    await service.delete_session(app_name=APP, user_id="ann", session_id=key.session_id)
    [event] = [e async for e in runs.run_agent(turn(key, "hi"))]  # ADK: session not found
    assert event.error_code == runs.AGENT_ERROR and "SessionNotFoundError" in event.error_message


async def test_sse_stream_frames_every_event_then_adks_error_frame(service):
    key = await new_key(service)
    frames = [f async for f in runs.sse_stream(turn(key, "Hi", streaming=True))]
    assert len(frames) == 4 and all(f.startswith("data: {") and f.endswith("}\n\n") for f in frames)

    gone = SessionKey(APP, "ann", "missing")
    [*_, last] = [f async for f in runs.sse_stream(turn(gone, "hi"))]
    assert last.startswith('data: {"error":"SessionNotFoundError: ')


async def test_rewind_undoes_the_session_state_of_later_invocations(service):
    key = await new_key(service)
    first = [e async for e in runs.run_agent(turn(key, "Please plan a trip to Lisbon"))]
    await runs.rewind(key, before_invocation_id=first[0].invocation_id)
    session = await service.get_session(app_name=APP, user_id="ann", session_id=key.session_id)
    assert session.events[-1].actions.rewind_before_invocation_id == first[0].invocation_id
    # ADK rewinds a key by setting it to None, and so do we.
    assert session.state["destination"] is None and session.state["last_answer"] is None
    assert session.state["user:trips_planned"] == 1  # shared scopes are not rewound, as in ADK
