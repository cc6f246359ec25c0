"""Writes of the runtime: each user action, one transaction."""
from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from google.adk.sessions.state import State

from inspector_app.services import recordings_copy
from memory_app.services import session_end
from sessions_app import broadcast as session_broadcast
from sessions_app import services as session_services
from sessions_app.models import Event, Session

from . import broadcast, runs

logger = logging.getLogger(__name__)

_background: set[asyncio.Task[None]] = set()  # keeps running chats from being garbage-collected


def chat_start(*, session: Session, request: runs.RunRequest, keep_running: bool = False) -> None:
    """Run one chat turn in the background, on the running event loop.

    Every event the run stores reaches viewers through the session service's
    broadcasts; the end of the run is broadcast here. Unless `keep_running`,
    the run stops once nobody has watched the session for
    ADKUI_ORPHAN_RUN_TIMEOUT seconds: a chat whose browser is gone would
    otherwise call the model on, for no one. Stopped, it can be resumed.
    """
    # A fresh context: the request's own (asgiref's per-request thread) ends
    # with the response, and the run goes on after it.
    task = asyncio.create_task(_chat(session, request, keep_running), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)


async def _chat(session: Session, request: runs.RunRequest, keep_running: bool) -> None:
    run = runs.run_agent(request)
    timeout = settings.ADKUI_ORPHAN_RUN_TIMEOUT
    watchdog = None if keep_running or timeout <= 0 else asyncio.create_task(_stop_when_unwatched(session.pk, run, timeout))
    try:
        async for _ in run:
            pass  # events reach the page through the session service's broadcasts
    finally:
        if watchdog is not None:
            watchdog.cancel()
    await sync_to_async(broadcast.run_finished)(session=session, error=str(run.error) if run.error else None)


async def _stop_when_unwatched(session_pk: int, run: runs.AgentRun, timeout: float) -> None:
    """Stop `run` once the session has had no viewer for `timeout` seconds (checked every few seconds)."""
    loop = asyncio.get_running_loop()
    poll = min(5.0, timeout / 4)
    alone_since: float | None = None
    while True:
        await asyncio.sleep(poll)
        if await session_broadcast.watched(session_pk):
            alone_since = None
        elif alone_since is None:
            alone_since = loop.time()
        elif loop.time() - alone_since >= timeout:
            logger.info("Stopping the chat run of session %s: no viewer for %ss.", session_pk, timeout)
            run.stop()
            return


def session_state_update(*, session: Session, state_delta: dict[str, Any]) -> Event:
    """Change state without running the agent: one event, as ADK's own state updates look.

    The same event as the API's PATCH (`sessions_app.services.state_update_event`);
    the timeline shows it as a state change. `temp:` keys are dropped, as ADK
    drops them from every stored event.
    """
    stored = {k: v for k, v in state_delta.items() if not k.startswith(State.TEMP_PREFIX)}
    return session_services.event_append(key=session.key, event=session_services.state_update_event(stored))


@transaction.atomic
def session_reset(*, session: Session) -> Session:
    """"New chat": a fresh session for the same user; this one is offloaded to
    long-term memory when ADKUI_MEMORY_OFFLOAD includes "reset"."""
    session_end(session=session, reason="reset")
    return session_services.session_create(app_name=session.app.name, user_id=session.user_id)


@transaction.atomic
def session_fork(*, session: Session, seq: int, app_name: str | None = None) -> Session:
    """A fork (see `sessions_app.services.session_fork`) with the inspector's records
    of the events it copied, so its model calls and tokens show as its events' do."""
    fork = session_services.session_fork(session=session, seq=seq, app_name=app_name)
    recordings_copy(source=session, fork=fork, upto_seq=seq)
    return fork
