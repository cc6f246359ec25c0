"""The session event stream over a real websocket consumer."""
from __future__ import annotations

import asyncio

import pytest
from channels.testing import WebsocketCommunicator
from google.adk.events.event import Event
from google.genai import types
from uvicorn.protocols.utils import ClientDisconnected

from adkui.asgi import application
from sessions_app import broadcast
from sessions_app.consumers import SessionEventsConsumer
from tests.conftest import async_wait_until

from .websockets import connect, settled

pytestmark = pytest.mark.django_db(transaction=True)
APP = "ws_app"


def text_event(text: str, **kwargs) -> Event:
    return Event(author="agent", invocation_id="inv", content=types.Content(role="model", parts=[types.Part(text=text)]), **kwargs)


async def test_a_missing_session_is_closed_with_4404():
    comm = WebsocketCommunicator(application, "/ws/sessions/987654/events/", headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert not connected and code == 4404
    await comm.disconnect()  # what the server sends after the close: the consumer ends


async def test_it_pushes_an_appended_event_rendered_by_the_row_partial(service, adk_session):
    session, pk = adk_session
    comm = await connect(f"/ws/sessions/{pk}/events/?after=0")
    await settled(comm, pk)
    await service.append_event(session, text_event("hello <b>there</b>", actions={"state_delta": {"k": 1}}))
    html = await comm.receive_from(timeout=5)
    assert 'hx-swap-oob="beforeend:#timeline"' in html and 'id="event-1"' in html
    assert 'data-key="k"' in html  # the diff is part of the row
    await comm.disconnect()


async def test_reconnect_resumes_after_the_last_seen_event_without_gap_or_duplicate(service, adk_session):
    session, pk = adk_session
    await service.append_event(session, text_event("one"))
    await service.append_event(session, text_event("two"))
    await service.append_event(session, text_event("three"))
    comm = await connect(f"/ws/sessions/{pk}/events/?after=1")
    first, second = await comm.receive_from(timeout=5), await comm.receive_from(timeout=5)
    assert 'id="event-2"' in first and 'id="event-3"' in second
    await service.append_event(session, text_event("four"))
    assert 'id="event-4"' in await comm.receive_from(timeout=5)
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_partial_events_stream_into_one_row_then_the_final_event_replaces_it(service, adk_session):
    session, pk = adk_session
    comm = await connect(f"/ws/sessions/{pk}/events/?after=0")
    final = text_event("Hello world")
    for chunk in ("Hel", "lo ", "world"):
        await service.append_event(session, text_event(chunk, partial=True, id=final.id))
    first = await comm.receive_from(timeout=5)
    assert "beforeend:#timeline" in first and "streaming" in first and "Hel" in first
    assert "beforeend:#ptext-" in await comm.receive_from(timeout=5)
    assert "world" in await comm.receive_from(timeout=5)
    await service.append_event(session, final)
    stored = await comm.receive_from(timeout=5)
    assert 'hx-swap-oob="delete"' in stored and 'id="event-1"' in stored
    await comm.disconnect()


async def test_filters_apply_to_live_events(service, adk_session):
    session, pk = adk_session
    comm = await connect(f"/ws/sessions/{pk}/events/?after=0&kind=error")
    await settled(comm, pk)
    await service.append_event(session, text_event("fine"))
    await service.append_event(session, Event(author="agent", invocation_id="inv", error_code="E", error_message="bad"))
    hidden = await comm.receive_from(timeout=5)  # the filtered-out event updates only the header's health
    assert 'id="session-health"' in hidden and 'id="event-' not in hidden
    html = await comm.receive_from(timeout=5)
    assert 'id="event-2"' in html and "bad" in html
    assert "1 error</span>" in html  # the header's health figures, as the append left them
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_new_sessions_appear_in_the_app_stream(service, adk_session):
    from sessions_app.models import App

    app_pk = await App.objects.values_list("pk", flat=True).aget(name=APP)
    comm = await connect(f"/ws/apps/{app_pk}/sessions/")
    await service.create_session(app_name=APP, user_id="u", session_id="brand-new")
    html = await comm.receive_from(timeout=5)
    assert "afterbegin:#session-rows" in html and "brand-new" in html
    await comm.disconnect()


async def test_a_viewer_whose_socket_closed_under_a_push_stops_counting_as_a_viewer(own_layer, service, adk_session):
    """The server raises ClientDisconnected for a push to a socket that closed
    meanwhile, and channels then never calls disconnect(): the consumer must
    leave its group anyway, or orphaned chat runs of the session never stop."""
    session, pk = adk_session
    inbox: asyncio.Queue = asyncio.Queue()
    await inbox.put({"type": "websocket.connect"})

    async def send(message: dict) -> None:
        if message["type"] == "websocket.send":
            raise ClientDisconnected()  # what uvicorn raises

    scope = {"type": "websocket", "path": f"/ws/sessions/{pk}/events/", "query_string": b"",
             "headers": [(b"origin", b"http://localhost")], "url_route": {"args": (), "kwargs": {"pk": pk}}}
    viewer = asyncio.create_task(SessionEventsConsumer.as_asgi()(scope, inbox.get, send))
    await async_wait_until(lambda: broadcast.watched(pk), message="the viewer never joined")
    await service.append_event(session, text_event("pushed to a closed socket"))
    with pytest.raises(ClientDisconnected):
        await asyncio.wait_for(viewer, timeout=10)
    assert not await broadcast.watched(pk)
