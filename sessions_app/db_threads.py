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

The pool hands a call to the thread that went idle last (`HotFirstPool`),
not to whichever idle thread the OS wakes: `ThreadPoolExecutor`'s idle
threads all wait on one queue, so calls one after another went round all
eight threads and, on PostgreSQL, to eight server backends in turn, each
asleep since its last call. Kept on one thread and one backend (scale_bench,
PostgreSQL, 100 000 sessions): one user's list 0.51 -> 0.44 ms, a create
1.79 -> 1.41, a recent-50 read 0.49 -> 0.41, an append 2.12 -> 1.94.
Concurrent calls still spread over the threads.
"""
from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import os
import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from django.conf import settings
from django.db import connection

T = TypeVar("T")


class HotFirstPool(Executor):
    """Up to `size` threads, started as calls need them; a call goes to the thread that
    went idle last, and waits in line only when all are busy.

    The threads are daemons: nothing waits for them at exit, as every caller
    (`run`) has awaited its call by then. A forked child starts with none
    (a server forking its workers after a call), rather than with inboxes of
    threads it does not have and, if a thread held the pool's lock at the
    fork, a lock nothing will release.
    """

    def __init__(self, size: int, name: str) -> None:
        self._size, self._name = size, name
        self._start_empty()
        os.register_at_fork(after_in_child=self._start_empty)

    def _start_empty(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue] = []  # the idle threads' inboxes, the last to go idle on top
        self._waiting: collections.deque = collections.deque()  # calls no thread was free for
        self._started = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        work = (future, functools.partial(fn, *args, **kwargs))
        with self._lock:
            if self._idle:
                self._idle.pop().put(work)
            elif self._started < self._size:
                inbox: queue.SimpleQueue = queue.SimpleQueue()
                inbox.put(work)
                name = f"{self._name}_{self._started + 1}"
                # A thread that cannot start raises here, to the caller, and is not counted.
                threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
                self._started += 1
            else:
                self._waiting.append(work)
        return future

    def _serve(self, inbox: queue.SimpleQueue) -> None:
        while True:
            future, call = inbox.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # the caller's to handle, as with ThreadPoolExecutor
                    future.set_exception(exc)
            del future, call  # nothing of a finished call is kept alive while the thread waits
            with self._lock:
                if self._waiting:
                    inbox.put(self._waiting.popleft())
                else:
                    self._idle.append(inbox)


_pool = HotFirstPool(settings.ADKUI_SESSION_THREADS, "adkui-sessions")
_sqlite_writes = HotFirstPool(1, "adkui-sqlite-writes")
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
