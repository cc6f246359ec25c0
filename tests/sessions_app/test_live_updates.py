"""Rows a page already shows change when later events arrive: a call gets paired
with its response, a rewind marks the rows it undid. Over a real consumer."""
from __future__ import annotations

import html

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from .websockets import connect, settled

pytestmark = pytest.mark.django_db(transaction=True)
APP = "live_updates_app"


def said(text: str, invocation_id: str) -> Event:
    return Event(author="agent", invocation_id=invocation_id, content=types.Content(role="model", parts=[types.Part(text=text)]))


def call(invocation_id: str = "inv-1") -> Event:
    part = types.Part(function_call=types.FunctionCall(id="c-1", name="weather", args={"city": "Oslo"}))
    return Event(author="agent", invocation_id=invocation_id, content=types.Content(role="model", parts=[part]))


def response(invocation_id: str = "inv-1") -> Event:
    part = types.Part(function_response=types.FunctionResponse(id="c-1", name="weather", response={"sky": "snow"}))
    return Event(author="agent", invocation_id=invocation_id, content=types.Content(role="user", parts=[part]))


def rewind(before: str) -> Event:
    return Event(author="user", invocation_id="inv-r", actions=EventActions(rewind_before_invocation_id=before))


async def test_the_response_pairs_the_call_row_the_page_shows(service, adk_session):
    session, pk = adk_session
    await service.append_event(session, call())
    comm = await connect(f"/ws/sessions/{pk}/events/?after=1")
    await settled(comm, pk)
    await service.append_event(session, response())
    frame = await comm.receive_from(timeout=5)
    assert 'id="event-2"' in frame and "to call weather" in frame
    assert 'id="paired-1-0" hx-swap-oob="true">↳ response: {"sky": "snow"}' in html.unescape(frame)
    await comm.disconnect()


async def test_a_reconnecting_viewer_gets_the_pairing_and_the_marks_it_missed(service, adk_session):
    session, pk = adk_session
    await service.append_event(session, said("one", "inv-0"))
    await service.append_event(session, call())
    await service.append_event(session, response())
    await service.append_event(session, rewind("inv-1"))
    comm = await connect(f"/ws/sessions/{pk}/events/?after=2")  # the page shows #1 and the call, #2
    frames = [await comm.receive_from(timeout=5) for _ in range(3)]
    assert 'id="event-3"' in frames[0] and 'id="event-4"' in frames[1]
    assert 'id="paired-2-0" hx-swap-oob="true">↳ response:' in frames[2]
    assert 'hx-swap-oob="innerHTML:#rw-2"' in frames[2]  # #3 came rendered as rewound already
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_rewind_hidden_by_filters_still_marks_the_rows_it_undid(service, adk_session):
    session, pk = adk_session
    for text, invocation in (("a", "inv-1"), ("b", "inv-2"), ("c", "inv-2")):
        await service.append_event(session, said(text, invocation))
    comm = await connect(f"/ws/sessions/{pk}/events/?after=3&author=agent")
    await settled(comm, pk)
    await service.append_event(session, rewind("inv-2"))
    frame = await comm.receive_from(timeout=5)
    assert 'hx-swap-oob="innerHTML:#rw-2,#rw-3"' in frame and "rewound" in frame
    assert 'id="event-4"' not in frame  # the rewind itself is the user's, filtered out
    await comm.disconnect()


async def test_no_pairing_is_sent_for_a_call_the_filters_hide(service, adk_session):
    session, pk = adk_session
    comm = await connect(f"/ws/sessions/{pk}/events/?after=0&kind=text")
    await settled(comm, pk)
    await service.append_event(session, call())
    await service.append_event(session, response())
    await service.append_event(session, said("done", "inv-1"))
    # The hidden events still update the header's health figures, nothing else.
    for _ in range(2):
        frame = await comm.receive_from(timeout=5)
        assert 'id="session-health"' in frame and 'id="event-' not in frame and "paired-" not in frame
    frame = await comm.receive_from(timeout=5)
    assert 'id="event-3"' in frame and "paired-" not in frame
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()
