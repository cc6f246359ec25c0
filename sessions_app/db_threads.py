"""The threads `DjangoSessionService`'s async methods do their database work on.

asgiref's `sync_to_async` runs every call on one shared thread (thread
sensitive), so concurrent sessions queued behind each other however many
writers the database could take. Here each call runs on a thread of a pool
of our own, each thread with its own Django connection, kept between calls:
connecting per call, or borrowing from psycopg's pool per call (with
Django's per-connection setup), cost PostgreSQL two thirds of one writer's
appends/s; so the settings size that pool for these threads on top of
requests' (`DB_POOL_MAX_SIZE`). A connection that saw an error is closed,
so the next call starts on a fresh one.

The hop itself is `loop.run_in_executor` with the caller's context, not
asgiref's `sync_to_async` (which costs about 110 µs more CPU a call, a
tenth of an append: its shield, two context restores and its deadlock
bookkeeping). The pool thread is told which loop called it, as asgiref's own
threads are, so an `async_to_sync` there (a broadcast after commit) runs on
that loop; and a caller cancelled while its call runs still waits for the
call to finish, as with `sync_to_async`, so a write is never left running
behind an exception that says it did not happen.

A caller in sync code that came in through `async_to_sync` (a view, a test
in a transaction) keeps asgiref's thread, whose open transaction the call
must see. On SQLite, which takes one writer at a time, writes go to one
thread of their own, so they queue there rather than in SQLite's busy
handler (whose sleeps, up to 100 ms a try, made eight writers slower than
one), and always on one connection: with writes spread over eight, each
connection found its page cache stale after the others' commits, and eight
writers made 688 appends/s where one thread made 872.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from django.conf import settings
from django.db import connection

T = TypeVar("T")

_pool = ThreadPoolExecutor(max_workers=settings.ADKUI_SESSION_THREADS, thread_name_prefix="adkui-sessions")
_sqlite_writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adkui-sqlite-writes")
_ON_SQLITE = settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")


def _on_pool_thread(loop: asyncio.AbstractEventLoop, call: Callable[..., T]) -> T:
    SyncToAsync.threadlocal.main_event_loop = loop
    SyncToAsync.threadlocal.main_event_loop_pid = os.getpid()
    try:
        return call()
    finally:
        if connection.errors_occurred:
            connection.close()


async def run(call: Callable[..., T], *args: Any, write: bool = False, **kwargs: Any) -> T:
    """`call(*args, **kwargs)` on a pool thread (see the module's doc); `write`: it writes."""
    if getattr(AsyncToSync.executors, "current", None) is not None:
        return await sync_to_async(call)(*args, **kwargs)
    loop = asyncio.get_running_loop()
    bound = functools.partial(contextvars.copy_context().run, call, *args, **kwargs)
    executor = _sqlite_writes if write and _ON_SQLITE else _pool
    future = loop.run_in_executor(executor, _on_pool_thread, loop, bound)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])  # the call runs on; let it finish before saying it was cancelled
        raise


def close_connections() -> None:
    """Close every pool thread's connection (a test database about to be flushed or dropped).

    Connections belong to their threads, so each thread closes its own: one
    task per thread, held at a barrier until all have started, so no thread
    takes two.
    """
    workers = settings.ADKUI_SESSION_THREADS
    barrier = threading.Barrier(workers)

    def close() -> None:
        barrier.wait(timeout=30)
        connection.close()

    for future in [_pool.submit(close) for _ in range(workers)]:
        future.result()
    _sqlite_writes.submit(_close_own_connection).result()


def _close_own_connection() -> None:
    connection.close()  # looked up on the thread that runs this: its own connection
