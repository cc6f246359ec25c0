"""Bodies without a Content-Length (HTTP chunked) are read, held to the cap, and parsed.

Sent to the real ASGI server over a socket: Django's test client speaks WSGI,
which cannot carry a body without a length.
"""
from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from sessions_app.models import Event

EVENTS = "/api/apps/trip_planner/users/u/sessions/s1/events"


@pytest.fixture
def session(service) -> None:
    service.create_session_sync(app_name="trip_planner", user_id="u", session_id="s1")


def _chunks(body: bytes, size: int = 100) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start:start + size]


def post_chunked(live_server, path: str, body: bytes) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30)
    connection.request("POST", path, body=_chunks(body), headers={"Content-Type": "application/json"},
                       encode_chunked=True)
    response = connection.getresponse()
    payload = json.loads(response.read() or b"{}")
    connection.close()
    return response.status, payload


@pytest.mark.django_db(transaction=True)
def test_a_chunked_event_is_stored_with_its_content(live_server, session) -> None:
    body = json.dumps({"author": "tool-runner", "content": {"parts": [{"text": "from a chunked body"}]}}).encode()
    status, payload = post_chunked(live_server, EVENTS, body)
    assert status == 201, payload
    stored = Event.objects.get()
    assert stored.author == "tool-runner" and stored.data["content"]["parts"][0]["text"] == "from a chunked body"


@pytest.mark.django_db(transaction=True)
def test_an_empty_chunked_body_is_refused(live_server, session) -> None:
    status, payload = post_chunked(live_server, EVENTS, b"")
    assert status == 400 and "body" in payload
    assert Event.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_over_the_cap_is_refused(live_server, session, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"author": "x", "content": {"parts": [{"text": "y" * 2000}]}}).encode()
    status, payload = post_chunked(live_server, EVENTS, body)
    assert status == 413 and "body" in payload
    assert Event.objects.count() == 0
