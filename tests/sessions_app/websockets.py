"""A websocket client of the ASGI app, connected as a local browser would be."""
from __future__ import annotations

from channels.testing import WebsocketCommunicator

from adkui.asgi import application


async def connect(path: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert connected, code
    return comm
