"""A write's answer is what the database says, whatever happens to its live push.

Redis (the channel layer) is killed under the API: every event is still
stored and answered 201; once Redis is back, a viewer catches up from the
database and live pushes flow again.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import Client
from google.adk.events.event import Event as AdkEvent
from google.genai import types

from adkui.asgi import application
from adkui.settings import redis_channel_layer
from sessions_app import broadcast, services
from sessions_app.keys import SessionKey
from sessions_app.models import Event, Session
from tests.hardening.redis_process import REDIS_SERVER, RedisProcess

pytestmark = pytest.mark.django_db(transaction=True)

APP = "fault_app"
KEY = SessionKey(APP, "u", "s")
UP, DOWN = 3, 17  # events posted while Redis is up, then after it is killed


@pytest.fixture
def own_redis(settings) -> Iterator[RedisProcess]:
    """The channel layer on a Redis of this test's own (the settings' Redis config)."""
    if REDIS_SERVER is None:
        pytest.skip("needs the redis-server binary")
    redis = RedisProcess()
    redis.start()
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis.url)}
    channel_layers.backends = {}  # (setting_changed does this too) no layer cached from another test
    try:
        yield redis
    finally:
        redis.kill()
        channel_layers.backends = {}


def _post(client: Client, n: int) -> int:
    body = {"id": f"e{n}", "author": "agent", "invocationId": "i",
            "content": {"role": "model", "parts": [{"text": f"event {n}"}]}}
    url = f"/api/apps/{APP}/users/u/sessions/s/events"
    return client.post(url, json.dumps(body), content_type="application/json").status_code


async def _catch_up_then_live(pk: int, after: int, post: Callable[[int], int]) -> list[str]:
    """A viewer that has seen events up to `after` reconnects, then one more event is posted."""
    comm = WebsocketCommunicator(application, f"/ws/sessions/{pk}/events/?after={after}",
                                 headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert connected, code
    frames = [await comm.receive_from(timeout=10) for _ in range(UP + DOWN - after)]
    assert await sync_to_async(post)(UP + DOWN + 1) == 201
    frames.append(await comm.receive_from(timeout=10))  # through the restarted Redis
    await comm.disconnect()
    return frames


def test_events_posted_with_redis_killed_are_stored_and_answered_201_and_a_viewer_catches_up(
    own_redis, service, caplog
):
    service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    pk = Session.objects.get(session_id="s").pk
    client = Client()
    answers = [_post(client, n) for n in range(1, UP + 1)]
    own_redis.kill()
    with caplog.at_level(logging.WARNING, logger="sessions_app.broadcast"):
        answers += [_post(client, n) for n in range(UP + 1, UP + DOWN + 1)]
        # Streamed chunks are pushed outside any transaction: no error there either.
        chunk = AdkEvent(author="agent", partial=True, content=types.Content(parts=[types.Part(text="chu")]))
        services.partial_event_show(key=KEY, event=chunk)

    assert answers == [201] * (UP + DOWN)
    stored = Event.objects.filter(session_id=pk).order_by("seq").values_list("seq", "event_id")
    assert list(stored) == [(n, f"e{n}") for n in range(1, UP + DOWN + 1)]
    failed = [r for r in caplog.records if r.name == "sessions_app.broadcast" and "Live push" in r.getMessage()
              and r.args[0] != "activity.changed"]  # the rows' and the chunk's (the home page's pings are throttled)
    assert len(failed) == DOWN + 1  # the fault was real: every push in the outage failed, and was logged

    own_redis.start()
    frames = async_to_sync(_catch_up_then_live)(pk, UP, lambda n: _post(client, n))
    for n, frame in enumerate(frames, start=UP + 1):
        assert f'id="event-{n}"' in frame and f"event {n}" in frame


def test_a_broadcast_that_raises_on_commit_does_not_fail_the_append(service, monkeypatch, caplog):
    """Whatever goes wrong after commit (here rendering the row) is logged; the caller gets its event."""
    service.create_session_sync(app_name=APP, user_id="u", session_id="s")

    def broken(**kwargs: object) -> None:
        raise RuntimeError("render failed")

    monkeypatch.setattr(broadcast, "event_appended", broken)
    row = services.event_append(key=KEY, event=AdkEvent(id="e1", author="agent"))
    assert row.seq == 1 and Event.objects.filter(event_id="e1").exists()
    assert any("render failed" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
