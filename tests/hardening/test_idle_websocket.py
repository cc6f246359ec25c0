"""An idle websocket stays open on the Redis channel layer and still gets the next push.

With redis-py's default 5 s read timeout, channels_redis's 5 s blocking read
timed out on every idle consumer, which dropped its websocket with an error
logged every 5-10 s. The server here is a real uvicorn process configured by
settings.py from REDIS_URL, as in production.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets
from django.conf import settings

from sessions_app.models import Session
from tests.conftest import wait_until
from tests.hardening.redis_process import REDIS_SERVER, RedisProcess, free_port
from tests.workers import database_url_for_children

ROOT = Path(__file__).resolve().parents[2]
IDLE_SECONDS = 12  # more than twice the old 5 s read timeout

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis of this test's own when redis-server is installed, else REDIS_URL."""
    if REDIS_SERVER is not None:
        redis = RedisProcess()
        redis.start()
        try:
            yield redis.url
        finally:
            redis.kill()
    elif settings.REDIS_URL:
        yield settings.REDIS_URL
    else:
        pytest.skip("needs redis-server or REDIS_URL")


def _serve(port: int, redis_url: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "REDIS_URL": redis_url, "DEBUG": "1"}
    command = [sys.executable, "-m", "uvicorn", "adkui.asgi:application", "--host", "127.0.0.1",
               "--port", str(port), "--no-access-log"]
    with log.open("wb") as out:  # the child keeps its own handle
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _healthy(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
        return json.loads(response.read())["channel_layer"] == "ok"


def _post_event(port: int) -> None:
    body = json.dumps({"author": "agent", "invocationId": "i", "content": {"parts": [{"text": "after the pause"}]}})
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/apps/idle_app/users/u/sessions/s/events",
                                     data=body.encode(), headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201


async def _idle_then_push(port: int, pk: int) -> str:
    url = f"ws://127.0.0.1:{port}/ws/sessions/{pk}/events/?after=0"
    async with websockets.connect(url, origin=f"http://127.0.0.1:{port}") as viewer:
        try:  # nothing to send: a closed socket raises here instead of timing out
            frame = await asyncio.wait_for(viewer.recv(), IDLE_SECONDS)
            pytest.fail(f"an idle viewer was sent {frame[:80]!r}")
        except TimeoutError:
            pass
        await asyncio.to_thread(_post_event, port)
        return await asyncio.wait_for(viewer.recv(), 10)


def test_an_idle_websocket_outlives_the_redis_read_timeout_and_gets_the_next_event(service, redis_url, tmp_path):
    service.create_session_sync(app_name="idle_app", user_id="u", session_id="s")
    pk = Session.objects.get(session_id="s").pk
    port, log = free_port(), tmp_path / "server.log"
    server = _serve(port, redis_url, log)
    try:
        wait_until(lambda: _healthy(port), timeout=60, interval=0.1, ignore=OSError, message="the server did not start")
        frame = asyncio.run(_idle_then_push(port, pk))
    finally:
        server.terminate()
        server.wait(10)
    assert 'id="event-1"' in frame and "after the pause" in frame
    output = log.read_text()
    assert "ERROR" not in output and "Traceback" not in output, output
