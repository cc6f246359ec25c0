"""Live pushes across processes when the channel layer stays in one.

The embedded default's in-memory channel layer reaches only the consumers of
its own process, yet events and results are also written by other processes:
the eval worker (`db_worker`), `import_adk --follow`, a script or `adk web`
using `DjangoSessionService`. So each broadcast a service registers with
`on_commit` also leaves a `Notice` row in the writer's transaction (it exists
exactly when the change does), and every process serving live pages polls
for the notices other processes wrote and runs the same broadcast function
itself, beside its consumers. Nothing is rendered by a writer nobody watches
through; a serving process renders only for groups it has members in.

With Redis (or any layer that crosses processes) the channel layer already
reaches every process: no notice is written and nothing polls.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import time
import uuid
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.apps import apps
from django.db import connection, connections, models, transaction

from .models import Notice

logger = logging.getLogger(__name__)

ORIGIN = uuid.uuid4().hex  # this process: its own notices were broadcast here already
INTERVAL = float(os.environ.get("ADKUI_RELAY_INTERVAL", "0.1"))  # seconds between two looks
KEEP_SECONDS = 60.0  # a notice older than this has been read by every serving process
GRACE_SECONDS = 2.0  # how long a missing id may still commit (PostgreSQL hands ids out before commit)
BATCH = 500
PRUNE_EVERY = 1000  # notices a writer leaves before it prunes, for stores no server reads

F = TypeVar("F", bound=Callable[..., None])
_relayed: dict[str, Callable[..., None]] = {}
_written = itertools.count(1)
_NOTICES = Notice._meta.db_table


def relayed(fn: F) -> F:
    """Mark a broadcast function as one `on_commit` may ask other processes to run.

    Its arguments must be model instances (sent as their pk and read again
    there; a row deleted since skips the broadcast) or JSON values.
    """
    _relayed[_name(fn)] = fn
    return fn


def on_commit(fn: Callable[..., None], /, **kwargs: Any) -> None:
    """Run the broadcast `fn(**kwargs)` once the current transaction commits,
    here and, when `fn` is marked `@relayed`, in every process that serves live
    pages; robustly, as broadcasts never fail the write they announce."""
    transaction.on_commit(lambda: fn(**kwargs), robust=True)
    name = _name(fn)
    if name not in _relayed or not _in_process_layer():  # not relayed: this process's viewers only
        return
    cast = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_NOTICES} (origin, name, kwargs, created) VALUES (%s, %s, {cast}, %s)",
            (ORIGIN, name, json.dumps(_encode(kwargs)), time.time()),
        )
        if next(_written) % PRUNE_EVERY == 0:
            _prune(cursor)


async def listen() -> None:
    """Called by a consumer before it reads what it missed: from then on, what
    other processes commit reaches this process's groups. Pair with `unlisten`."""
    if _in_process_layer():
        await _listener().join()


def unlisten() -> None:
    if _in_process_layer():
        _listener().leave()


def _in_process_layer() -> bool:
    return isinstance(get_channel_layer(), InMemoryChannelLayer)


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _encode(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        key: {"$model": value._meta.label, "pk": value.pk} if isinstance(value, models.Model) else value
        for key, value in kwargs.items()
    }


def _decode(kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments again, rows read anew; None when a row is gone since."""
    decoded = {}
    for key, value in kwargs.items():
        if isinstance(value, dict) and "$model" in value:
            value = apps.get_model(value["$model"])._default_manager.filter(pk=value["pk"]).first()
            if value is None:
                return None
        decoded[key] = value
    return decoded


def _prune(cursor: Any) -> None:
    cursor.execute(f"DELETE FROM {_NOTICES} WHERE created < %s", (time.time() - KEEP_SECONDS,))


class Seen:
    """Which notice ids were handled: every id up to `low`, and those in `above`.

    Ids may commit out of order (PostgreSQL takes them from a sequence before
    the transaction commits), so an id missing below one already seen is
    waited for `GRACE_SECONDS` (it may be a rollback, which never comes).
    """

    def __init__(self, low: int) -> None:
        self.low = low
        self.above: set[int] = set()
        self.missing: dict[int, float] = {}  # id -> when first found missing

    def add(self, pk: int) -> bool:
        """Whether `pk` is new (and now seen)."""
        if pk <= self.low or pk in self.above:
            return False
        self.above.add(pk)
        return True

    def advance(self, now: float) -> None:
        if not self.above:
            return
        top = max(self.above)
        for pk in range(self.low + 1, top):
            if pk not in self.above:
                self.missing.setdefault(pk, now)
        while self.low < top:
            nxt = self.low + 1
            if nxt in self.above:
                self.above.discard(nxt)
            elif now - self.missing[nxt] < GRACE_SECONDS:
                break
            self.missing.pop(nxt, None)
            self.low = nxt


class _Listener:
    """One per serving event loop: polls while any consumer listens."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.members = 0
        self.task: asyncio.Task | None = None
        self.ready: asyncio.Future | None = None
        # One thread of its own: its database connection, and no queueing
        # behind the views' thread.
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="adkui-relay")
        self.pruned = 0.0

    async def join(self) -> None:
        self.members += 1
        if self.task is None:
            self.ready = self.loop.create_future()
            self.task = self.loop.create_task(self._poll(self.ready))
        # The first look fixes where reading starts: later commits are relayed,
        # earlier ones are in what the consumer reads next.
        try:
            await asyncio.shield(self.ready)
        except BaseException:
            self.leave()
            raise

    def leave(self) -> None:
        self.members -= 1
        if self.members <= 0 and self.task is not None:
            self.members, task, self.task = 0, self.task, None
            task.cancel()
            self.executor.submit(connections.close_all)

    def _sync(self, fn: Callable[[], Any]) -> Any:
        # Not thread-sensitive: the relayed broadcasts' async_to_sync still
        # sends on this loop, where the consumers are.
        return sync_to_async(fn, thread_sensitive=False, executor=self.executor)()

    async def _poll(self, ready: asyncio.Future) -> None:
        try:
            seen = Seen(await self._sync(_newest_notice))
        except BaseException as exc:
            ready.set_exception(exc)
            raise
        ready.set_result(None)
        while True:
            await asyncio.sleep(INTERVAL)
            try:
                await self._sync(lambda: self._relay_new(seen))
            except Exception:  # the database away for a moment: look again next time
                logger.warning("Reading other processes' notices failed; trying again.", exc_info=True)

    def _relay_new(self, seen: Seen) -> None:
        rows = Notice.objects.filter(pk__gt=seen.low).order_by("pk").values_list("pk", "origin", "name", "kwargs")
        for pk, origin, name, kwargs in rows[:BATCH]:
            if seen.add(pk) and origin != ORIGIN:
                _run(name, kwargs)
        now = time.time()
        seen.advance(now)
        if now - self.pruned > KEEP_SECONDS / 2:
            self.pruned = now
            with connection.cursor() as cursor:
                _prune(cursor)


def _newest_notice() -> int:
    return Notice.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _run(name: str, kwargs: dict[str, Any]) -> None:
    fn = _relayed.get(name)
    if fn is None:  # a writer of another version of adkui
        logger.warning("No relayed broadcast is named %r; notice skipped.", name)
        return
    try:
        decoded = _decode(kwargs)
        if decoded is not None:
            fn(**decoded)
    except Exception:  # one broken notice never stops the others
        logger.warning("Relaying %s failed.", name, exc_info=True)


_listeners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Listener] = weakref.WeakKeyDictionary()


def _listener() -> _Listener:
    loop = asyncio.get_running_loop()
    listener = _listeners.get(loop)
    if listener is None:
        listener = _listeners[loop] = _Listener(loop)
    return listener
