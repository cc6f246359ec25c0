"""The home page's socket turns a burst of changes into one reload of its summaries."""
from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from adkui.asgi import application
from runtime_app import consumers
from sessions_app.broadcast import ACTIVITY_GROUP

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_burst_of_changes_is_one_refresh(monkeypatch):
    monkeypatch.setattr(consumers, "REFRESH_DELAY", 0.2)
    comm = WebsocketCommunicator(application, "/ws/home/", headers=[(b"origin", b"http://localhost")])
    assert (await comm.connect(timeout=10))[0]
    for _ in range(5):
        await get_channel_layer().group_send(ACTIVITY_GROUP, {"type": "activity.changed"})
    frame = await comm.receive_from(timeout=5)
    assert 'id="home-refresh"' in frame and 'hx-trigger="load"' in frame
    assert await comm.receive_nothing(timeout=0.5)
    await get_channel_layer().group_send(ACTIVITY_GROUP, {"type": "activity.changed"})
    assert 'id="home-refresh"' in await comm.receive_from(timeout=5)
    await comm.disconnect()
    await asyncio.sleep(0)
