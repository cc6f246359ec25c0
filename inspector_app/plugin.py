"""The recorder: an ADK plugin that stores what every model and tool call saw and did.

ADK calls a plugin around each agent run, model call and tool call, and with
every event before it is stored (google/adk/plugins/base_plugin.py). We keep
the calls of each running invocation in memory until the event each one
produced is known, then insert one row per call (`services`):

- A model call's event is the one carrying the same `EventActions` object as
  the callback context ADK gave `before_model_callback` (ADK builds the event
  from that object); failing that, the next event of the same agent that is
  not a tool response. Its function calls' ids tie the tool calls it asked
  for to it.
- A tool call's event is the function response with its call id, or, when
  the tool raised, the error event ADK writes next.
- Whatever is still open when the run ends (an abort, a crash) is stored as is.

Recording must never break or fail a run: every callback swallows (and logs)
its own errors and returns None, so ADK proceeds as if we were not there.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App as AdkApp
from google.adk.plugins.base_plugin import BasePlugin

from sessions_app import health
from sessions_app import services as session_services
from sessions_app.keys import SessionKey

from . import payloads, placeholders, selectors, services

logger = logging.getLogger(__name__)

PLUGIN_NAME = "adkui_recorder"
MAX_OPEN_INVOCATIONS = 200  # aborted runs never say goodbye; forget the oldest beyond this


def app_with_recorder(root: BaseAgent | AdkApp, *, app_name: str) -> AdkApp:
    """An ADK App for `root` (an agent or an App) with the recorder added to its plugins.

    A loaded App is copied, never changed: the agent loader caches it.
    """
    if isinstance(root, AdkApp):
        if any(isinstance(p, RecorderPlugin) for p in root.plugins):
            return root
        return root.model_copy(update={"plugins": [*root.plugins, RecorderPlugin()]})
    # model_construct, as Runner itself wraps a bare agent: App's validation
    # would refuse app names that `Runner(app_name=..., agent=...)` accepts.
    return AdkApp.model_construct(name=app_name, root_agent=root, plugins=[RecorderPlugin()])


def _ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _new_span() -> str:
    return uuid.uuid4().hex


def _error_text(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return f"{type(error).__name__}: {error}"


@dataclass(eq=False)  # compared by identity: no two calls are the same call
class _Open:
    span_id: str
    parent_span_id: str
    agent_name: str
    branch: str | None
    started_at: float = field(default_factory=time.time)
    t0: float = field(default_factory=time.perf_counter)
    duration_ms: float | None = None
    error: str = ""

    def finish(self, error: str = "") -> None:
        self.duration_ms = _ms_since(self.t0)
        self.error = error or self.error


@dataclass(eq=False)
class _AgentRun(_Open):
    transferred_from: str = ""
    description: str | None = None


@dataclass(eq=False)
class _ModelCall(_Open):
    actions: Any = None  # the EventActions its event will carry
    llm_request: Any = None  # held until the call ends: agent callbacks may still change it
    templates: list[dict[str, Any]] = field(default_factory=list)
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    first_chunk_ms: float | None = None


@dataclass(eq=False)
class _ToolCall(_Open):
    tool_name: str = ""
    function_call_id: str = ""
    args: Any = None
    result: Any = None
    call_event_id: str = ""
    tool_type: str | None = None  # what ADK's trace names the tool's kind: its class
    tool_description: str | None = None


@dataclass
class _Invocation:
    key: SessionKey
    invocation_id: str
    session_pk: int | None = None
    session_resolved: bool = False
    agents: list[_AgentRun] = field(default_factory=list)  # open, outermost first
    model_calls: list[_ModelCall] = field(default_factory=list)  # waiting for their event
    tools: dict[str, _ToolCall] = field(default_factory=dict)  # by function call id
    asked_by: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> (model span, event id)
    transfers: dict[str, str] = field(default_factory=dict)  # target agent -> agent that transferred

    def parent_agent(self, *, name: str | None = None, branch: str | None = None) -> str:
        for run in reversed(self.agents):
            if name is not None and run.agent_name != name:
                continue
            if branch is not None and not branch.startswith(run.branch or ""):
                continue
            return run.span_id
        return self.agents[-1].span_id if self.agents and name is not None else ""


def _safely(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[None]]:
    @functools.wraps(method)
    async def wrapper(self: RecorderPlugin, **kwargs: Any) -> None:
        try:
            await method(self, **kwargs)
        except Exception:  # the recorder must never change how a run goes
            logger.exception("adkui recorder: %s failed", method.__name__)
        return None

    return wrapper


class RecorderPlugin(BasePlugin):
    """Records model calls, tool calls and agent runs of every invocation it sees."""

    def __init__(self, name: str = PLUGIN_NAME) -> None:
        super().__init__(name=name)
        self._invocations: dict[str, _Invocation] = {}

    # ---- bookkeeping -----------------------------------------------------------

    def _invocation(self, invocation_context: Any) -> _Invocation | None:
        invocation_id = invocation_context.invocation_id
        found = self._invocations.get(invocation_id)
        if found is not None or not services.recorder_enabled():
            return found
        session = invocation_context.session
        found = _Invocation(SessionKey(session.app_name, session.user_id, session.id), invocation_id)
        self._invocations[invocation_id] = found
        while len(self._invocations) > MAX_OPEN_INVOCATIONS:
            self._invocations.pop(next(iter(self._invocations)))
        return found

    def _span(self, inv: _Invocation, item: _Open) -> services.Span:
        return services.Span(
            key=inv.key, session_pk=inv.session_pk, invocation_id=inv.invocation_id, span_id=item.span_id,
            parent_span_id=item.parent_span_id, agent_name=item.agent_name, branch=item.branch,
            started_at=item.started_at, duration_ms=item.duration_ms, error=item.error,
        )

    async def _write(self, inv: _Invocation, write: Callable[[], Any]) -> None:
        """One insert, in the thread the ORM runs in; a failed one costs only its own record."""

        def run() -> None:
            if not inv.session_resolved:
                inv.session_pk = selectors.session_pk_for(inv.key)
                inv.session_resolved = True
            write()

        try:
            await sync_to_async(run)()
        except Exception:  # e.g. the session was deleted mid-run
            logger.exception("adkui recorder: could not store a record of invocation %s", inv.invocation_id)

    async def _store_agent(self, inv: _Invocation, run: _AgentRun) -> None:
        await self._write(inv, lambda: services.agent_run_record(
            span=self._span(inv, run), transferred_from=run.transferred_from, description=run.description))

    async def _store_model_call(self, inv: _Invocation, call: _ModelCall, event_id: str = "") -> None:
        if call in inv.model_calls:
            inv.model_calls.remove(call)
        if call.request is None and call.llm_request is not None:
            call.request = self._request(call)
        call.llm_request = None
        await self._write(inv, lambda: services.model_call_record(
            span=self._span(inv, call), event_id=event_id, request=call.request or {},
            response=call.response or {}, first_chunk_ms=call.first_chunk_ms))
        if call.request and "answered_by" not in (call.response or {}):  # a callback's answer: no request was sent
            await self._write(inv, lambda: session_services.session_health_record_model_call(
                session_pk=inv.session_pk, request_fingerprint=_fingerprint(call.request), ttft_ms=_ttft_ms(call)))

    async def _store_tool(self, inv: _Invocation, tool: _ToolCall, event_id: str = "") -> None:
        inv.tools.pop(tool.function_call_id, None)
        await self._write(inv, lambda: services.tool_call_record(
            span=self._span(inv, tool), tool_name=tool.tool_name, function_call_id=tool.function_call_id,
            args=tool.args, result=tool.result, event_id=event_id, call_event_id=tool.call_event_id,
            tool_type=tool.tool_type, tool_description=tool.tool_description))

    def _request(self, call: _ModelCall) -> dict[str, Any]:
        request = payloads.request_json(call.llm_request)
        request["spans"] = placeholders.locate(call.templates, request)
        request["templates"] = placeholders.stored_templates(call.templates)
        return request

    def _model_call(self, inv: _Invocation, callback_context: Any) -> _ModelCall | None:
        actions = getattr(callback_context, "_event_actions", None)
        for call in reversed(inv.model_calls):
            if call.actions is actions and call.response is None:
                return call
        for call in reversed(inv.model_calls):
            if call.agent_name == callback_context.agent_name and call.response is None:
                return call
        return None

    # ---- agent runs ------------------------------------------------------------

    @_safely
    async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        inv = self._invocation(callback_context._invocation_context)
        if inv is None:
            return
        branch = callback_context._invocation_context.branch
        inv.agents.append(_AgentRun(
            span_id=_new_span(), parent_span_id=inv.parent_agent(branch=branch or ""), agent_name=agent.name,
            branch=branch, transferred_from=inv.transfers.pop(agent.name, ""), description=str(agent.description or ""),
        ))

    @_safely
    async def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        await self._end_agent(callback_context, agent.name, "")

    @_safely
    async def on_agent_error_callback(self, *, agent: Any, callback_context: Any, error: Exception) -> None:
        await self._end_agent(callback_context, agent.name, _error_text(error))

    async def _end_agent(self, callback_context: Any, name: str, error: str) -> None:
        inv = self._invocations.get(callback_context.invocation_id)
        run = next((r for r in reversed(inv.agents) if r.agent_name == name), None) if inv else None
        if run is None:
            return
        inv.agents.remove(run)
        run.finish(error)
        await self._store_agent(inv, run)

    # ---- model calls -----------------------------------------------------------

    @_safely
    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        context = callback_context._invocation_context
        inv = self._invocation(context)
        if inv is None:
            return
        inv.model_calls.append(_ModelCall(
            span_id=_new_span(), parent_span_id=inv.parent_agent(name=callback_context.agent_name),
            agent_name=callback_context.agent_name, branch=context.branch,
            actions=getattr(callback_context, "_event_actions", None), llm_request=llm_request,
            templates=placeholders.agent_templates(context.agent, context.session.state),
        ))

    @_safely
    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
        inv = self._invocations.get(callback_context.invocation_id)
        call = self._model_call(inv, callback_context) if inv else None
        if call is None:
            return
        if llm_response.partial:
            if call.first_chunk_ms is None:
                call.first_chunk_ms = _ms_since(call.t0)
            return
        call.finish()
        call.request = self._request(call)
        call.llm_request = None
        call.response = payloads.response_json(llm_response)
        if not _makes_event(llm_response):
            await self._store_model_call(inv, call)

    @_safely
    async def on_model_error_callback(self, *, callback_context: Any, llm_request: Any, error: Exception) -> None:
        inv = self._invocations.get(callback_context.invocation_id)
        call = self._model_call(inv, callback_context) if inv else None
        if call is None:
            return
        call.finish(_error_text(error))
        call.request = self._request(call)
        call.llm_request = None
        call.response = {}  # waits for the error event ADK writes next, or the run's end

    # ---- tool calls ------------------------------------------------------------

    @_safely
    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> None:
        inv = self._invocation(tool_context._invocation_context)
        if inv is None:
            return
        call_id = tool_context.function_call_id or _new_span()
        model_span, event_id = inv.asked_by.get(call_id, ("", ""))
        inv.tools[call_id] = _ToolCall(
            span_id=_new_span(), parent_span_id=model_span or inv.parent_agent(name=tool_context.agent_name),
            agent_name=tool_context.agent_name, branch=tool_context._invocation_context.branch,
            tool_name=tool.name, function_call_id=call_id, args=payloads.to_json(tool_args), call_event_id=event_id,
            tool_type=type(tool).__name__, tool_description=str(tool.description or ""),
        )

    @_safely
    async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any) -> None:
        inv = self._invocations.get(tool_context.invocation_id)
        tool_call = inv.tools.get(tool_context.function_call_id or "") if inv else None
        if tool_call is not None:
            tool_call.finish()
            tool_call.result = payloads.to_json(result)

    @_safely
    async def on_tool_error_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception) -> None:
        inv = self._invocations.get(tool_context.invocation_id)
        tool_call = inv.tools.get(tool_context.function_call_id or "") if inv else None
        if tool_call is not None:
            tool_call.finish(_error_text(error))

    # ---- events: linking calls to what they produced ---------------------------

    @_safely
    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        inv = self._invocations.get(invocation_context.invocation_id)
        if inv is None or event.partial:
            return
        call = self._call_for_event(inv, event)
        if call is not None:
            for function_call in event.get_function_calls():
                inv.asked_by[function_call.id or ""] = (call.span_id, event.id)
            await self._store_model_call(inv, call, event.id)
        for response in event.get_function_responses():
            tool_call = inv.tools.get(response.id or "")
            if tool_call is not None and tool_call.duration_ms is not None:
                await self._store_tool(inv, tool_call, event.id)
        if event.error_code:
            await self._store_failed(inv, event.id)
        if event.actions.transfer_to_agent:
            inv.transfers[event.actions.transfer_to_agent] = event.author

    def _call_for_event(self, inv: _Invocation, event: Any) -> _ModelCall | None:
        for call in inv.model_calls:
            if call.actions is not None and call.actions is event.actions and not call.error:
                if call.response is None:
                    _answered_by_callback(call, event)
                return call
        if event.get_function_responses():
            return None
        done = (c for c in inv.model_calls if c.response is not None and not c.error)
        return next((c for c in done if c.agent_name == event.author and c.branch == event.branch), None)

    async def _store_failed(self, inv: _Invocation, event_id: str) -> None:
        """A raised model or tool error: the error event ADK writes for it is its event."""
        for call in [c for c in inv.model_calls if c.error]:
            await self._store_model_call(inv, call, event_id)
        for tool_call in [t for t in inv.tools.values() if t.error]:
            await self._store_tool(inv, tool_call, event_id)

    # ---- the end of a run ------------------------------------------------------

    @_safely
    async def after_run_callback(self, *, invocation_context: Any) -> None:
        await self._close(invocation_context.invocation_id, "")

    @_safely
    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        await self._close(invocation_context.invocation_id, _error_text(error))

    async def _close(self, invocation_id: str, error: str) -> None:
        """Store whatever is still open: calls whose event never came, agents never closed."""
        inv = self._invocations.pop(invocation_id, None)
        if inv is None:
            return
        for call in list(inv.model_calls):
            if call.duration_ms is None:
                call.error = error or "the run ended before the model answered"
            await self._store_model_call(inv, call)
        for tool_call in list(inv.tools.values()):
            if tool_call.duration_ms is None:
                tool_call.error = error or "the run ended before the tool returned"
            await self._store_tool(inv, tool_call)
        for run in reversed(inv.agents):
            # An agent that transferred control is never closed by ADK; it lasts the run.
            run.finish(error)
            await self._store_agent(inv, run)


def _fingerprint(request: dict[str, Any]) -> int:
    """What the model was sent, without the placeholder spans and templates we add for the page."""
    return health.request_fingerprint({k: v for k, v in request.items() if k not in ("spans", "templates")})


def _ttft_ms(call: _ModelCall) -> float | None:
    """Time to the first streamed chunk; unstreamed, the whole answer is the first token. None if it failed."""
    if call.first_chunk_ms is not None:
        return call.first_chunk_ms
    failed = call.error or (call.response or {}).get("error_code")
    return None if failed else call.duration_ms


def _answered_by_callback(call: _ModelCall, event: Any) -> None:
    """An agent's before_model callback answered: the model was never called."""
    call.finish()
    call.response = {"answered_by": "before_model_callback"}
    if event.content is not None:
        call.response["content"] = payloads.content_json(event.content)


def _makes_event(llm_response: Any) -> bool:
    """Whether ADK turns this response into an event (base_llm_flow._postprocess_async)."""
    return bool(
        llm_response.content or llm_response.error_code or llm_response.interrupted
        or llm_response.grounding_metadata
    )
