"""Two real server processes on one database and one Redis channel layer:
an event appended through worker A reaches a viewer on worker B."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import websockets
from channels.layers import get_channel_layer
from django.conf import settings

from sessions_app.broadcast import session_group
from sessions_app.models import Session as SessionRow
from tests.conftest import async_wait_until, wait_until
from tests.workers import database_url_for_children

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL: several workers share live events through Redis"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_worker(port: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url_for_children(), "REDIS_URL": settings.REDIS_URL, "DEBUG": "1"}
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "adkui.asgi:application"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_healthy(port: int) -> dict:
    def health() -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return json.loads(response.read())

    return wait_until(health, timeout=60, interval=0.1, ignore=OSError, message=f"no healthy worker on port {port}")


def _group_has_members(group: str) -> bool:
    """Whether a consumer has joined `group` on the Redis channel layer, which
    keeps a group as a sorted set of its members' channel names."""
    import redis

    layer = get_channel_layer()
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        return client.zcard(f"{layer.prefix}:group:{group}") > 0
    finally:
        client.close()


def test_an_event_appended_on_worker_a_reaches_a_viewer_on_worker_b(service):
    service.create_session_sync(app_name="scale_app", user_id="u", session_id="s")
    pk = SessionRow.objects.get(session_id="s").pk
    port_a, port_b = _free_port(), _free_port()
    workers = [_start_worker(port_a), _start_worker(port_b)]
    try:
        assert _wait_healthy(port_a)["channel_layer"] == "ok" and _wait_healthy(port_b)["channel_layer"] == "ok"

        async def watch_b_append_on_a() -> str:
            url = f"ws://127.0.0.1:{port_b}/ws/sessions/{pk}/events/?after=0"
            async with websockets.connect(url, origin=f"http://127.0.0.1:{port_b}") as viewer:
                # The consumer joins its group before it accepts; make sure it has.
                await async_wait_until(lambda: asyncio.to_thread(_group_has_members, session_group(pk)), timeout=10)
                body = json.dumps({"author": "worker-a", "invocationId": "i",
                                   "content": {"parts": [{"text": "hello from A"}]}}).encode()
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port_a}/api/apps/scale_app/users/u/sessions/s/events",
                    data=body, headers={"Content-Type": "application/json"}, method="POST")
                await asyncio.to_thread(urllib.request.urlopen, request, None, 10)
                return await asyncio.wait_for(viewer.recv(), 10)

        frame = asyncio.run(watch_b_append_on_a())
        assert 'id="event-1"' in frame and "hello from A" in frame
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(10)
