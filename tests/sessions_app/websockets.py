"""A websocket client of the ASGI app, connected as a local browser would be."""
from __future__ import annotations

from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from adkui.asgi import application
from sessions_app import broadcast


async def connect(path: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert connected, code
    return comm


async def settled(comm: WebsocketCommunicator, session_pk: int) -> None:
    """Wait until the consumer has finished connecting, its catch-up included.

    The session service appends on threads of its own (sessions_app.db_threads),
    beside the consumer's catch-up, which would otherwise send an event appended
    right after connecting as a caught-up row rather than as its live push. A
    consumer handles one message at a time, so once a message sent now comes
    back, the connect handler has returned.
    """
    await get_channel_layer().group_send(
        broadcast.session_group(session_pk), {"type": "run.finished", "html": "settled"}
    )
    assert await comm.receive_from(timeout=5) == "settled"
