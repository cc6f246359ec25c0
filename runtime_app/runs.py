"""The one place that runs an agent, for the REST API and the chat UI alike.

`run_agent` drives ADK's `Runner.run_async` on our session service and yields
ADK events as they come (streaming fragments too). It never raises for what
the agent does: the exception ends the run and is in the session as an error
event, so the timeline shows why the run ended. `sse_stream` frames a run as
ADK's `/run_sse` does.

A failing sub-agent's error event names that sub-agent (`runners.ErrorAuthorPlugin`),
not the parent ADK would name.

Running invocations are kept in a registry so `stop_run` can abort them.
The registry lives in this process only: with several workers, a stop must
reach the worker that runs the invocation (the browser's own SSE or
websocket connection does; another request may not).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import pydantic_core
from asgiref.sync import sync_to_async
from google.adk.agents import RunConfig
from google.adk.agents.invocation_context import new_invocation_context_id
from google.adk.agents.run_config import StreamingMode
from google.adk.events import Event as AdkEvent
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from sessions_app import services
from sessions_app.keys import SessionKey
from sessions_app.session_service import DjangoSessionService
from sessions_app.wire import adk_json

from .runners import make_runner

logger = logging.getLogger(__name__)

AGENT_ERROR = "AGENT_ERROR"


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


_running: dict[SessionKey, list[AgentRun]] = {}
_running_lock = threading.Lock()  # stop_run may be called from any thread


class AgentRun:
    """One turn of the session's agent: iterate it (once) for ADK's events, not the user's own.

    Partial (streaming) events are yielded but, as in ADK, not stored. An
    exception in the agent ends the iteration and is kept in `error`; the
    session records it as an error event: ADK's own when ADK wrote one (ADK 2
    records a failing node's exception), else ours (`AGENT_ERROR`), which is
    then yielded last. Closing the iteration early (a client went away)
    aborts the invocation, and ADK seals it with abort events.
    """

    def __init__(self, request: RunRequest, *, runner: Runner | None = None) -> None:
        self.request = request
        self.runner = runner
        self.error: Exception | None = None
        self.invocation_id = request.invocation_id
        self.last_author: str | None = None  # the agent that spoke last: the one running
        self._abort = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def __aiter__(self) -> AsyncIterator[AdkEvent]:
        return self._events()

    def stop(self) -> None:
        """Ask ADK to abort the invocation at its next step; safe from any thread."""
        if self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._abort.set)
        except RuntimeError:  # that loop has closed: the run is over anyway
            pass

    async def _events(self) -> AsyncIterator[AdkEvent]:
        self._loop = asyncio.get_running_loop()
        _register(self.request.key, self)
        recorded: set[tuple[str | None, str | None]] = set()
        try:
            self.runner = self.runner or make_runner(self.request.key.app_name)
            async with aclosing(self.runner.run_async(**_run_kwargs(self.request, self._abort))) as events:
                try:
                    async for event in events:
                        self.invocation_id = event.invocation_id or self.invocation_id
                        if event.error_code:
                            recorded.add((event.error_code, event.error_message))
                        if event.partial:
                            # ADK's Runner never hands partial events to the
                            # session service; show them to the timeline here.
                            await _show_partial(self.request.key, event)
                        # The user's event is asked for only to learn the
                        # invocation id early; callers get what ADK's /run returns.
                        if event.author != "user":
                            self.last_author = event.author
                            yield event
                except (GeneratorExit, asyncio.CancelledError):
                    # Signalled before ADK's generator is closed, so ADK seals the
                    # invocation with abort events instead of leaving it dangling.
                    self._abort.set()
                    raise
        except Exception as exc:  # an agent's failure must end the run, not the server
            logger.exception("Agent run failed for %s", self.request.key)
            self.error = exc
            if (_error_code(exc), str(exc)) not in recorded:
                author = self.last_author or _agent_name(self.runner, self.request.key)
                yield await _error_event(self.request.key, self.runner, self.invocation_id, exc, author)
        finally:
            _unregister(self.request.key, self)


@sync_to_async
def _show_partial(key: SessionKey, event: AdkEvent) -> None:
    services.partial_event_show(key=key, event=event)


def run_agent(request: RunRequest, *, runner: Runner | None = None) -> AgentRun:
    """Run the session's agent for one turn: `async for event in run_agent(request)`."""
    return AgentRun(request, runner=runner)


def _error_code(exc: Exception) -> str:
    # How ADK's node runner names an exception in its error event.
    status = getattr(exc, "status", None)
    return status if isinstance(status, str) else type(exc).__name__


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


async def _error_event(
    key: SessionKey, runner: Runner | None, invocation_id: str | None, exc: Exception, author: str
) -> AdkEvent:
    """The event that ends a failed run, stored when the session still exists."""
    event = AdkEvent(
        invocation_id=invocation_id or new_invocation_context_id(),
        author=author,
        error_code=AGENT_ERROR,
        error_message=f"{type(exc).__name__}: {exc}",
    )
    service = runner.session_service if runner is not None else DjangoSessionService()
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


# ---- ADK's wire form: JSON and Server-Sent Events -------------------------------


async def sse_stream(request: RunRequest) -> AsyncIterator[str]:
    """A run as ADK's `/run_sse` frames it: `data: <event JSON>` and a blank line per event.

    A failed run ends with ADK's own error frame after its error event, so
    ADK clients report it as they do for ADK's server.
    """
    run = AgentRun(request)
    async for event in run:
        for part in _sse_events(event):
            yield _sse_frame(adk_json(part))
    if run.error is not None:
        yield _sse_frame(_sse_error(run.error))


def _sse_frame(payload: dict[str, Any]) -> str:
    return f"data: {pydantic_core.to_json(payload).decode()}\n\n"


def _sse_events(event: AdkEvent) -> list[AdkEvent]:
    """ADK's web UI reads artifacts from a separate content-less frame; split as ADK's server does."""
    if not (event.actions.artifact_delta and event.content and event.content.parts):
        return [event]
    content_event = event.model_copy(deep=True)
    content_event.actions.artifact_delta = {}
    artifact_event = event.model_copy(deep=True)
    artifact_event.content = None
    return [content_event, artifact_event]


def _sse_error(exc: Exception) -> dict[str, Any]:
    """ADK's error frame for an exception (its shape, snake_case keys and all)."""
    details = {"error_type": type(exc).__name__, "error_message": str(exc), "timestamp": time.time()}
    return {"error": f"{type(exc).__name__}: {exc}", "error_details": details}


# ---- stopping runs ------------------------------------------------------------


def _register(key: SessionKey, run: AgentRun) -> None:
    with _running_lock:
        _running.setdefault(key, []).append(run)


def _unregister(key: SessionKey, run: AgentRun) -> None:
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


def running_sessions() -> list[SessionKey]:
    """Sessions with a run in this process now (the home page lists them); read only."""
    with _running_lock:
        return list(_running)


def stop_run(key: SessionKey) -> int:
    """Ask every run of this session in this process to stop; returns how many were asked.

    Safe from any thread. ADK stops at its next step and stores abort events
    sealing the invocation, which can later be resumed by its invocation id.
    """
    with _running_lock:
        runs = list(_running.get(key, []))
    for run in runs:
        run.stop()
    return len(runs)


# ---- rewinding ----------------------------------------------------------------


async def rewind(key: SessionKey, *, before_invocation_id: str, runner: Runner | None = None) -> None:
    """Rewind the session to just before an invocation, through ADK's `Runner.rewind_async`.

    ADK appends one rewind event undoing the session state changed since
    then; raises ADK's InvocationNotFoundError for an unknown invocation.
    """
    runner = runner or make_runner(key.app_name)
    await runner.rewind_async(
        user_id=key.user_id, session_id=key.session_id, rewind_before_invocation_id=before_invocation_id
    )
