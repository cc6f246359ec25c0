"""Writes of the runtime: each user action, one transaction."""
from __future__ import annotations

import asyncio
import contextvars

from asgiref.sync import sync_to_async
from django.db import transaction

from memory_app.services import session_end
from sessions_app import services as session_services
from sessions_app.models import Session

from . import broadcast, runs

_background: set[asyncio.Task[None]] = set()  # keeps running chats from being garbage-collected


def chat_start(*, session: Session, request: runs.RunRequest) -> None:
    """Run one chat turn in the background, on the running event loop.

    Every event the run stores reaches viewers through the session service's
    broadcasts; the end of the run is broadcast here.
    """
    # A fresh context: the request's own (asgiref's per-request thread) ends
    # with the response, and the run goes on after it.
    task = asyncio.create_task(_chat(session, request), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)


async def _chat(session: Session, request: runs.RunRequest) -> None:
    run = runs.run_agent(request)
    async for _ in run:
        pass  # events reach the page through the session service's broadcasts
    await sync_to_async(broadcast.run_finished)(session=session, error=str(run.error) if run.error else None)


@transaction.atomic
def session_reset(*, session: Session) -> Session:
    """"New chat": a fresh session for the same user; this one is offloaded to
    long-term memory when ADKUI_MEMORY_OFFLOAD includes "reset"."""
    session_end(session=session, reason="reset")
    return session_services.session_create(app_name=session.app.name, user_id=session.user_id)
