"""Websocket consumers: join a group, forward pre-rendered HTML.

The session stream resumes without gap or duplicate: the page (or the
reconnecting client) says which sequence number it has (`?after=N`); the
consumer joins the group first, then sends what came after N, and from then
on forwards only newer events, fetching any it missed in between.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from access.auth import websocket_refusal

from . import broadcast, relay, selectors

CLOSE_NOT_FOUND = 4404


def _query(scope: dict[str, Any]) -> dict[str, str]:
    parsed = parse_qs(scope.get("query_string", b"").decode())
    return {k: v[-1] for k, v in parsed.items()}


class PushConsumer(AsyncWebsocketConsumer):
    """A page's socket that joins one group and forwards its pushes (the eval
    run page's consumer is one too): it leaves the group however it ends."""

    group: str | None = None  # set once the socket has joined it

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Channels calls disconnect() for a close it receives. A push to a
            # socket that closed meanwhile ends the consumer instead (the
            # server raises ClientDisconnected), and a member left behind
            # would count as a viewer for ever: its session's orphaned chat
            # runs would never stop.
            await self.leave()

    async def disconnect(self, code: int) -> None:
        await self.leave()

    async def join(self, group: str) -> None:
        """Join `group`; what other processes commit from now on reaches it too
        (`relay`), so call this before reading what the page has missed."""
        await relay.listen()
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)

    async def leave(self) -> None:
        if self.group is not None:
            group, self.group = self.group, None
            await self.channel_layer.group_discard(group, self.channel_name)
            relay.unlisten()

    def query_number(self, name: str) -> int | None:
        """A whole number the page put in the socket's URL (`?after=12`); None when absent or not one."""
        value = _query(self.scope).get(name, "")
        return int(value) if value.isdigit() else None

    async def allowed(self) -> bool:
        """Closes the socket for an anonymous user (4401) or one without a role (4403) when login is required."""
        code = await websocket_refusal(self.scope)
        if code is None:
            return True
        await self.close(code=code)
        return False

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale DB connections before every message: a hop to
        # the sync thread per viewer per event, which with 50 viewers was most
        # of the push latency. These consumers reach the database only through
        # database_sync_to_async, which does that itself.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class SessionEventsConsumer(PushConsumer):
    async def connect(self) -> None:
        if not await self.allowed():
            return
        self.session = await database_sync_to_async(selectors.session_with_app)(self.scope["url_route"]["kwargs"]["pk"])
        if self.session is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        query = _query(self.scope)
        self.filters = selectors.Filters.from_query(query)
        after = self.query_number("after")
        self.last_seq = self.session.revision if after is None else after
        self.streaming: set[str] = set()
        await self.join(broadcast.session_group(self.session.pk))
        await self.accept()
        await self._catch_up()

    async def _catch_up(self) -> None:
        catch_up = await database_sync_to_async(broadcast.catch_up)(self.session, self.last_seq, self.filters)
        for html in catch_up.frames:
            await self.send(text_data=html)
        self.last_seq = max(self.last_seq, catch_up.revision)

    async def event_appended(self, message: dict[str, Any]) -> None:
        if message["seq"] <= self.last_seq:
            return  # already sent by the catch-up
        if message["seq"] > self.last_seq + 1:
            await self._catch_up()  # another writer's broadcast overtook this one
            return
        self.last_seq = message["seq"]
        html = message["html"]
        key = message.get("stream_key")
        if key in self.streaming:
            self.streaming.discard(key)
            html = f'<div id="partial-{key}" hx-swap-oob="delete"></div>' + html
        shown = [html] if self.filters.matches(message) else []
        shown += [u["html"] for u in message.get("updates", ()) if u["meta"] is None or self.filters.matches(u["meta"])]
        if shown:
            await self.send(text_data="".join(shown))

    async def event_partial(self, message: dict[str, Any]) -> None:
        if self.filters.active:
            return
        key = message["stream_key"]
        first = key not in self.streaming
        self.streaming.add(key)
        await self.send(text_data=message["first_html"] if first else message["next_html"])

    async def run_finished(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["html"])

    async def artifacts_changed(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["html"])

    async def session_deleted(self, message: dict[str, Any]) -> None:
        await self.send(text_data='<div id="session-gone" hx-swap-oob="true" class="card form-error">'
                                  "This session was deleted.</div>")
        await self.close()


class AppSessionsConsumer(PushConsumer):
    """New sessions of one app, for the session browser."""

    async def connect(self) -> None:
        if not await self.allowed():
            return
        pk = self.scope["url_route"]["kwargs"]["pk"]
        if not await database_sync_to_async(selectors.app_exists)(pk):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.join(broadcast.app_group(pk))
        await self.accept()

    async def session_created(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["html"])
