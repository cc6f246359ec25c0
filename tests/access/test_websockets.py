"""Websockets need the viewer role: 4401 without a login, 4403 without a role."""
from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from adkui.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


def _streams(world: Any) -> list[str]:
    return [f"/ws/sessions/{world.pk}/events/", f"/ws/apps/{world.app_pk}/sessions/",
            f"/ws/evals/runs/{world.queued_run_pk}/", "/ws/home/"]


def _connect(path: str, cookie: bytes | None) -> tuple[bool, int | None]:
    headers = [(b"origin", b"http://localhost")] + ([(b"cookie", cookie)] if cookie else [])

    async def connect() -> tuple[bool, int | None]:
        comm = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await comm.connect(timeout=10)
        # Refused too, the consumer ends on the disconnect a server sends after the close; left
        # running, its channel layer receive (on Redis) had to be cancelled by the loop's shutdown,
        # which once hung there.
        await comm.disconnect()
        return connected, code

    return async_to_sync(connect)()


@pytest.mark.parametrize("role, expected", [
    ("anonymous", (False, 4401)),
    (None, (False, 4403)),
    ("viewer", (True, None)),
    ("editor", (True, None)),
    ("admin", (True, None)),
    ("superuser", (True, None)),
])
def test_a_stream_opens_for_viewers_and_up(production, client_as, world, role, expected):
    client = client_as(role)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode() if role != "anonymous" else None
    for path in _streams(world):
        connected, code = _connect(path, cookie)
        assert (connected, code if not connected else None) == expected, path


def test_local_dev_streams_need_no_login(world):
    assert _connect(f"/ws/sessions/{world.pk}/events/", None)[0]
