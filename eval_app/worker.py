"""This process's eval worker: runs execute as asyncio tasks in the background.

Under an ASGI server (daphne, uvicorn) a run is a task on the server's own
event loop, the loop the websocket consumers live on, so the in-process channel
layer delivers its progress. Without one (WSGI runserver, a script) runs go to
a background thread with its own loop. The worker keeps nothing another process
needs: progress lives in the database, and a run whose worker dies (its
heartbeat goes stale) is marked interrupted and can resume anywhere.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import threading
import uuid

from asgiref.sync import SyncToAsync, sync_to_async
from django.db import close_old_connections

from .engine import execute_run
from .progress import eval_runs_mark_interrupted
from .selectors import active_run_workers

logger = logging.getLogger(__name__)

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_alive: set[int] = set()
_tasks: set[asyncio.Task] = set()  # held so running tasks are not garbage-collected


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="adkui-eval-worker", daemon=True)
            _thread.start()
        return _loop


def submit(run_pk: int) -> None:
    """Run `run_pk` in the background, on the server's loop when there is one."""
    # Counted alive before it is scheduled, so a reaper looking right now does not
    # take the queued run for an orphan.
    _alive.add(run_pk)
    loop = _server_loop()
    if loop is None:
        loop = _event_loop()
    # A fresh context: the caller's carries the request's asgiref executor,
    # which is gone once the response is sent, and the run outlives it.
    loop.call_soon_threadsafe(_start, run_pk, context=contextvars.Context())


def _server_loop() -> asyncio.AbstractEventLoop | None:
    """The running loop of the ASGI server whose sync view (or on_commit) we are in."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    local = SyncToAsync.threadlocal
    loop = getattr(local, "main_event_loop", None)
    if loop is not None and getattr(local, "main_event_loop_pid", None) == os.getpid() and loop.is_running():
        return loop
    return None


def _start(run_pk: int) -> None:
    task = asyncio.get_running_loop().create_task(_execute(run_pk), context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _execute(run_pk: int) -> None:
    try:
        await execute_run(run_pk, worker=WORKER_ID)
    except Exception:
        logger.exception("Eval run %s crashed", run_pk)
    finally:
        _alive.discard(run_pk)
        await sync_to_async(close_old_connections)()


def alive_runs() -> frozenset[int]:
    return frozenset(_alive)


def reap() -> int:
    """Mark runs that no live worker owns as interrupted (see progress)."""
    dead = {w for w in active_run_workers() if _is_dead(w)}
    return eval_runs_mark_interrupted(alive=alive_runs(), worker=WORKER_ID, dead_workers=dead)


def _is_dead(worker: str) -> bool:
    """Whether a worker of this machine is gone: its process has exited, or this
    process now holds its pid (a restarted container), so a restart is noticed at
    once rather than when the heartbeat goes stale. Other machines: unknown."""
    host, _, rest = worker.partition(":")
    pid, _, _ = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return worker != WORKER_ID
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, but not ours to signal
        return False
    return False
