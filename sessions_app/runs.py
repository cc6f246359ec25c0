"""The one place that runs an agent, for the REST API and the chat UI alike.

`run_agent` drives ADK's `Runner.run_async` on our session service and yields
ADK events as they come (streaming fragments too). It never raises for what
the agent does: an exception becomes a final error event that is also stored,
so the timeline shows why the run ended, and the generator ends.

Running invocations are kept in a registry so `stop_run` can abort them.
The registry lives in this process only: with several workers, a stop must
reach the worker that runs the invocation (the browser's own SSE or
websocket connection does; another request may not).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents.invocation_context import new_invocation_context_id
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.events.event import Event as AdkEvent
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types

from adkui import agents

from .services import SessionKey

logger = logging.getLogger(__name__)

AGENT_ERROR = "AGENT_ERROR"
# Where the error event keeps the exception's class name (ADK's SSE error
# frame reports it separately from the message).
ERROR_TYPE_KEY = "adkui_error_type"


@dataclass(frozen=True)
class RunRequest:
    """One turn: a new message, or `invocation_id` to resume an interrupted invocation."""

    key: SessionKey
    new_message: types.Content | None = None
    state_delta: dict[str, Any] | None = None
    invocation_id: str | None = None
    streaming: bool = False
    custom_metadata: dict[str, Any] | None = None
    max_llm_calls: int | None = None

    def run_config(self) -> RunConfig:
        extra = {} if self.max_llm_calls is None else {"max_llm_calls": self.max_llm_calls}
        return RunConfig(
            streaming_mode=StreamingMode.SSE if self.streaming else StreamingMode.NONE,
            custom_metadata=self.custom_metadata,
            **extra,
        )


@dataclass(eq=False)
class _Run:
    loop: asyncio.AbstractEventLoop
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    invocation_id: str | None = None


_running: dict[SessionKey, list[_Run]] = {}
_running_lock = threading.Lock()  # stop_run may be called from any thread


async def run_agent(request: RunRequest, *, runner: Runner | None = None) -> AsyncIterator[AdkEvent]:
    """Run the session's agent for one turn, yielding ADK's events (not the user's own).

    Partial (streaming) events are yielded but, as in ADK, not stored. Closing
    the generator early (a client went away) aborts the invocation, and ADK
    seals it with abort events.
    """
    run = _Run(loop=asyncio.get_running_loop(), invocation_id=request.invocation_id)
    _register(request.key, run)
    try:
        runner = runner or agents.make_runner(request.key.app_name)
        async with aclosing(runner.run_async(**_run_kwargs(request, run.abort))) as events:
            try:
                async for event in events:
                    run.invocation_id = event.invocation_id or run.invocation_id
                    # The user's event is asked for only to learn the invocation
                    # id early; callers get what ADK's /run returns.
                    if event.author != "user":
                        yield event
            except (GeneratorExit, asyncio.CancelledError):
                # Signalled before ADK's generator is closed, so ADK seals the
                # invocation with abort events instead of leaving it dangling.
                run.abort.set()
                raise
    except Exception as exc:  # an agent's failure must end the run, not the server
        logger.exception("Agent run failed for %s", request.key)
        yield await _error_event(request.key, runner, run.invocation_id, exc)
    finally:
        _unregister(request.key, run)


def _run_kwargs(request: RunRequest, abort: asyncio.Event) -> dict[str, Any]:
    return {
        "user_id": request.key.user_id,
        "session_id": request.key.session_id,
        "new_message": request.new_message,
        "state_delta": request.state_delta,
        "invocation_id": request.invocation_id,
        "run_config": request.run_config(),
        "yield_user_message": True,
        "abort_signal": abort,
    }


async def _error_event(key: SessionKey, runner: Runner | None, invocation_id: str | None, exc: Exception) -> AdkEvent:
    """The event that ends a failed run, stored when the session still exists."""
    event = AdkEvent(
        invocation_id=invocation_id or new_invocation_context_id(),
        author=_agent_name(runner, key),
        error_code=AGENT_ERROR,
        error_message=f"{type(exc).__name__}: {exc}",
        custom_metadata={ERROR_TYPE_KEY: type(exc).__name__},
    )
    service = runner.session_service if runner is not None else _default_session_service()
    try:
        # No events needed: the revision marker alone makes the append exact.
        session = await service.get_session(
            app_name=key.app_name, user_id=key.user_id, session_id=key.session_id,
            config=GetSessionConfig(num_recent_events=0),
        )
        if session is not None:
            await service.append_event(session, event)
    except Exception:  # the caller must still get the error event
        logger.exception("Could not store the error event of a failed run in %s", key)
    return event


def _agent_name(runner: Runner | None, key: SessionKey) -> str:
    agent = runner.agent if runner is not None else None
    return getattr(agent, "name", None) or key.app_name


def _default_session_service() -> BaseSessionService:
    from adkui.adk import DjangoSessionService

    return DjangoSessionService()


# ---- stopping runs ------------------------------------------------------------


def _register(key: SessionKey, run: _Run) -> None:
    with _running_lock:
        _running.setdefault(key, []).append(run)


def _unregister(key: SessionKey, run: _Run) -> None:
    with _running_lock:
        runs = _running.get(key, [])
        if run in runs:
            runs.remove(run)
        if not runs:
            _running.pop(key, None)


def running_invocations(key: SessionKey) -> list[str | None]:
    """Invocation ids of this session's runs in this process (None: not known yet)."""
    with _running_lock:
        return [run.invocation_id for run in _running.get(key, [])]


def stop_run(key: SessionKey) -> int:
    """Ask every run of this session in this process to stop; returns how many were asked.

    Safe from any thread. ADK stops at its next step and stores abort events
    sealing the invocation, which can later be resumed by its invocation id.
    """
    with _running_lock:
        runs = list(_running.get(key, []))
    for run in runs:
        try:
            run.loop.call_soon_threadsafe(run.abort.set)
        except RuntimeError:  # that loop has closed: the run is over anyway
            pass
    return len(runs)


# ---- rewinding ----------------------------------------------------------------


async def rewind(key: SessionKey, *, before_invocation_id: str, runner: Runner | None = None) -> None:
    """Rewind the session to just before an invocation, through ADK's `Runner.rewind_async`.

    ADK appends one rewind event undoing the session state changed since
    then; raises ADK's InvocationNotFoundError for an unknown invocation.
    """
    runner = runner or agents.make_runner(key.app_name)
    await runner.rewind_async(
        user_id=key.user_id, session_id=key.session_id, rewind_before_invocation_id=before_invocation_id
    )
