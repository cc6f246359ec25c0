"""Edit and continue: change a stored model call, re-run its invocation from there in a fork.

`continue_create` checks the edited request with ADK's own `LlmRequest` (an
invalid edit is an `EditError` naming the field, and nothing is written),
then forks the session just before the call's invocation into a sandbox of
its agent (`agent@edit-…`, see `sessions_app.sandbox`): the fork's `app:` and
`user:` state is its own, copied from the original's as of that point, so
nothing the fork runs reaches the original or the scopes it shares. State
edits, of any scope, are one state-update event of the fork (the one write
path). The fork is labelled with what was edited (`Session.edit_label`,
searchable in the session browser).

`continue_run` then sends that invocation's user message again, on the agent
as its code is now, with `FromRecordPlugin` first among the Runner's plugins:
the invocation's model calls before the edited one are answered from the
stored responses (the model is not called), the edited call goes to the model
with the edited request, and everything after it runs live. Tool calls made
before the edited call answer from their stored results (and re-apply the
state they wrote); after it they run. Calls are matched by order within the
invocation; when today's code calls another agent or tool than the record at
a served position, the record no longer applies and the run stops with an
error event saying so (`RecordDiverged`), rather than serving wrong answers.
`transfer_to_agent` always runs: it is how ADK hands over, not an answer.
Further user turns are ordinary chats in the fork.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import pydantic
from asgiref.sync import sync_to_async
from django.db import transaction
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.state import State
from google.genai import types

from access import limits
from access.limits import InputError
from inspector_app.models import ModelCall, ToolCall
from sessions_app import broadcast as session_broadcast
from sessions_app import health, selectors
from sessions_app import services as session_services
from sessions_app.models import Event, Session
from sessions_app.sandbox import real_app_name, sandbox_app_name

from . import broadcast, runs
from .replay import ReplayError, fresh_runner, turns_of
from .replay_diff import TurnDiff, compare
from .services import session_fork

logger = logging.getLogger(__name__)

EDIT_LABEL_PREFIX = "edit"
VIEWER_WAIT = 5.0  # seconds a continued run started from the page waits for the fork's page to connect
TRANSFER_TOOL = "transfer_to_agent"
NOT_IN_CONFIG = {"system_instruction", "tools", "http_options"}  # edited as their own fields, or never stored
REQUEST_FIELDS = ("system_instruction", "contents", "tools", "config")
FIELD_NAMES = {"system_instruction": "system instruction", "contents": "contents", "tools": "tool declarations",
               "config": "generation config"}


class EditError(InputError):
    """An edit that cannot be continued: `field` names what is wrong (pydantic's loc, dotted)."""


class RecordDiverged(RuntimeError):
    """Today's agent code made another call than the record at a position served from it."""


@dataclass(frozen=True)
class Edits:
    """What to change: any of the request's parts (None: as stored), and state keys (any scope)."""

    system_instruction: str | None = None
    contents: list[Any] | None = None
    tools: list[Any] | None = None
    config: dict[str, Any] | None = None
    state: dict[str, Any] = field(default_factory=dict)

    def request_changes(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The request parts given and different from the stored request's."""
        changes = {}
        for name in REQUEST_FIELDS:
            value = getattr(self, name)
            if value is not None and value != _stored_part(stored, name):
                changes[name] = value
        return changes


@dataclass(frozen=True)
class StoredToolCall:
    tool_name: str
    result: Any
    state_delta: dict[str, Any]


@dataclass
class ContinuePlan:
    fork: Session
    runner: Runner
    new_message: types.Content
    state_delta: dict[str, Any] | None


_running: set[int] = set()  # fork pks whose continued run is going on in this process
_background: set[asyncio.Task[None]] = set()


# ---- checking the edit -------------------------------------------------------------------


def _stored_part(stored: dict[str, Any], name: str) -> Any:
    default: Any = "" if name == "system_instruction" else ({} if name == "config" else [])
    return stored.get(name, default)


def edited_request(stored: dict[str, Any], changes: dict[str, Any]) -> LlmRequest:
    """The stored request with `changes`, as ADK's `LlmRequest`; EditError naming the field ADK refuses."""
    parts = {name: changes.get(name, _stored_part(stored, name)) for name in REQUEST_FIELDS}
    for name, kind in (("contents", list), ("tools", list), ("config", dict)):
        if not isinstance(parts[name], kind):
            raise EditError(name, f"must be a JSON {'array' if kind is list else 'object'}.")
    if not isinstance(parts["system_instruction"], str):
        raise EditError("system_instruction", "must be text.")
    config = {**parts["config"], "system_instruction": parts["system_instruction"] or None,
              "tools": _tools(parts["tools"]) or None}
    data = {"model": stored.get("model") or None, "contents": _restorable(parts["contents"]), "config": config}
    try:
        return LlmRequest.model_validate(data)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        raise EditError(_field_name(error["loc"]), error["msg"]) from None


def _tools(declared: list[Any]) -> list[dict[str, Any]]:
    """The inspector's tool list (`payloads.tools_json`) as genai `Tool`s: one for every function, one per built-in."""
    tools: list[dict[str, Any]] = []
    functions = []
    for index, entry in enumerate(declared):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise EditError(f"tools.{index}.name", "every tool needs a name.")
        if entry.get("kind") == "builtin":
            tools.append({entry["name"]: entry.get("spec") or {}})
        elif entry.get("kind", "function") == "function":
            declaration = {"name": entry["name"], "description": entry.get("description") or None,
                           "parameters_json_schema": entry.get("parameters") or None,
                           "response_json_schema": entry.get("response") or None}
            functions.append({k: v for k, v in declaration.items() if v is not None})
        else:
            raise EditError(f"tools.{index}.kind", f"{entry.get('kind')!r} cannot be sent again (only functions and built-ins).")
    return ([{"function_declarations": functions}] if functions else []) + tools


def _field_name(loc: tuple[Any, ...]) -> str:
    """pydantic's loc of an LlmRequest error, in the edit's own field names."""
    path = [str(p) for p in loc]
    if path[:2] == ["config", "system_instruction"]:
        return "system_instruction"
    if path[:2] == ["config", "tools"]:
        return "tools"
    return ".".join(path)


def _restorable(value: Any) -> Any:
    """Stored values the recorder shortened (a thought signature kept as its size) left out,
    so what was stored validates again as ADK's types."""
    if isinstance(value, list):
        return [_restorable(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: _restorable(v) for k, v in value.items() if not (k == "thought_signature" and isinstance(v, dict))}


def check_state(state: Any) -> dict[str, Any]:
    if not isinstance(state, dict):
        raise EditError("state", "must be a JSON object of state keys and values.")
    for key in state:
        if not key:
            raise EditError("state", "a key cannot be empty.")
        if key.startswith(State.TEMP_PREFIX):
            raise EditError(f"state.{key}", "temp: state lives for one invocation only and is never stored.")
    # What the write path would refuse inside the fork's transaction, refused before it.
    limits.check_json_value(state, "state")
    limits.check_state_size(state, "state")
    return state


# ---- forking -----------------------------------------------------------------------------


def invocation_start(call: ModelCall) -> Event:
    """The user event that started the call's invocation; EditError when there is none."""
    if call.session is None:
        raise EditError("model_call", "its session is no longer stored.")
    first = Event.objects.filter(session=call.session, invocation_id=call.invocation_id).order_by("seq").first()
    if first is None or first.author != "user":
        raise EditError("model_call", "its invocation did not start with a user message, so it cannot be sent again.")
    return first


def continue_create(*, model_call: ModelCall, edits: Edits) -> ContinuePlan:
    """The fork (created) and what to run in it; EditError, and nothing written, for a bad edit."""
    stored = model_call.request or {}
    changes = edits.request_changes(stored)
    edited = edited_request(stored, changes)
    state = check_state(edits.state)
    start = invocation_start(model_call)
    user_event = selectors.event_page(model_call.session, after_seq=start.seq - 1, limit=1)[0][1]
    calls = list(ModelCall.objects.for_invocation(model_call.session, model_call.invocation_id))
    position = [c.pk for c in calls].index(model_call.pk)
    tools = ToolCall.objects.for_invocation(model_call.session, model_call.invocation_id).filter(
        started_at__lt=model_call.started_at)
    plugin = FromRecordPlugin(
        served=[(c.agent_name, c.response or {}) for c in calls[:position]],
        edited_agent=model_call.agent_name, edited=edited, changes=changes,
        tools=[StoredToolCall(t.tool_name, t.result, _tool_state(model_call.session, t)) for t in tools],
    )
    session = model_call.session
    sandbox = sandbox_app_name(real_app_name(session.app.name), f"{EDIT_LABEL_PREFIX}-{uuid.uuid4().hex[:12]}")
    try:
        runner = fresh_runner(sandbox)
    except ReplayError as exc:  # the agent is gone from the agents folder, or fails to load
        raise EditError("model_call", str(exc)) from exc
    runner.plugin_manager.plugins.insert(0, plugin)  # first: an answer from the record is no model call to record
    with transaction.atomic():
        fork = session_fork(session=session, seq=start.seq - 1, app_name=sandbox)
        if state:
            session_services.event_append(key=fork.key, event=session_services.state_update_event(state))
        label = edit_label(model_call, position, changes, state)
        Session.objects.filter(pk=fork.pk).update(edit_label=label, edited_call_pk=model_call.pk)
    fork.edit_label, fork.edited_call_pk = label, model_call.pk
    return ContinuePlan(fork=fork, runner=runner, new_message=user_event.content,
                        state_delta=user_event.actions.state_delta or None)


def _tool_state(session: Session, call: ToolCall) -> dict[str, Any]:
    """The state delta of the event that answered the tool call (what the tool wrote)."""
    event = Event.objects.filter(session=session, event_id=call.event_id).values_list("data", flat=True).first()
    actions = (event or {}).get("actions") or {}
    return dict(actions.get("state_delta") or {})


def edit_label(call: ModelCall, position: int, changes: dict[str, Any], state: dict[str, Any]) -> str:
    edited = [FIELD_NAMES[name] for name in changes] + [f"state {key}" for key in state]
    what = ", ".join(edited) if edited else "nothing (sent again as stored)"
    return f"Edited model call {position + 1} of {call.agent_name} (invocation {call.invocation_id}): {what}"[:1000]


# ---- running -----------------------------------------------------------------------------


async def edit_and_continue(*, model_call: ModelCall, edits: Edits) -> Session:
    """Create the fork and start its run in the background; returns the fork at once.

    Must be called on the server's event loop (an async view), which runs the fork.
    The run waits (up to VIEWER_WAIT seconds) for the fork's page, where the caller
    is sent, to open its live connection: the point is to watch it run, and an
    offline run can end before the page connects, leaving it showing "running".
    """
    plan = await sync_to_async(continue_create)(model_call=model_call, edits=edits)
    _running.add(plan.fork.pk)
    task = asyncio.create_task(continue_run(plan, wait_for_viewer=VIEWER_WAIT), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return plan.fork


async def continue_run(plan: ContinuePlan, *, wait_for_viewer: float = 0.0) -> None:
    """Send the invocation's user message again in the fork; errors end as the fork's error event."""
    _running.add(plan.fork.pk)
    try:
        await _viewer(plan.fork.pk, wait_for_viewer)
        request = runs.RunRequest(key=plan.fork.key, new_message=plan.new_message, state_delta=plan.state_delta)
        run = runs.run_agent(request, runner=plan.runner)
        async for _ in run:
            pass  # the events reach the fork's page through the session service's broadcasts
        await sync_to_async(broadcast.run_finished)(session=plan.fork, error=str(run.error) if run.error else None)
    except Exception:  # the run must end, not the server
        logger.exception("The continued run of fork %s stopped", plan.fork.pk)
    finally:
        _running.discard(plan.fork.pk)


async def _viewer(session_pk: int, timeout: float) -> None:
    """Return once someone watches the session live, or after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline and not await session_broadcast.watched(session_pk):
        await asyncio.sleep(0.05)


def is_running(fork: Session) -> bool:
    return fork.pk in _running


class FromRecordPlugin(BasePlugin):
    """Answers the calls before the edited one from the record, and sends the edited request (see the module)."""

    def __init__(self, *, served: list[tuple[str, dict[str, Any]]], edited_agent: str, edited: LlmRequest,
                 changes: dict[str, Any], tools: list[StoredToolCall]) -> None:
        super().__init__(name="adkui_from_record")
        self.served = served
        self.edited_agent = edited_agent
        self.edited = edited
        self.changes = changes
        self.tools = tools
        self.invocation_id: str | None = None
        self.model_calls = 0
        self.tool_calls = 0

    def _mine(self, invocation_id: str) -> bool:
        """Only the first invocation of the run is the one re-run; later user turns are live."""
        self.invocation_id = self.invocation_id or invocation_id
        return invocation_id == self.invocation_id

    async def before_model_callback(self, *, callback_context: Any, llm_request: LlmRequest) -> LlmResponse | None:
        if not self._mine(callback_context.invocation_id):
            return None
        number = self.model_calls
        self.model_calls += 1
        if number > len(self.served):
            return None
        agent = callback_context.agent_name
        expected = self.served[number][0] if number < len(self.served) else self.edited_agent
        if agent != expected:
            raise RecordDiverged(f"Model call {number + 1} of the invocation is {agent}'s now, {expected}'s in the record: "
                                 "the agent's code took another path before the edited call, so the record no longer applies.")
        if number < len(self.served):
            return LlmResponse.model_validate(_restorable(self.served[number][1]))
        self._apply_edits(llm_request)
        return None

    def _apply_edits(self, llm_request: LlmRequest) -> None:
        """The edited parts into ADK's request, in place (the recorder keeps the same object)."""
        config = llm_request.config = llm_request.config or types.GenerateContentConfig()
        if "contents" in self.changes:
            llm_request.contents = self.edited.contents
        if "system_instruction" in self.changes:
            config.system_instruction = self.edited.config.system_instruction
        if "tools" in self.changes:
            config.tools = self.edited.config.tools
        if "config" in self.changes:  # the whole config as edited: a key taken out is unset
            for name in type(config).model_fields.keys() - NOT_IN_CONFIG:
                setattr(config, name, getattr(self.edited.config, name))

    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> dict | None:
        if not self._mine(tool_context.invocation_id) or self.model_calls > len(self.served):
            return None  # after the edit point: the tool runs
        number = self.tool_calls
        self.tool_calls += 1
        if number >= len(self.tools):
            raise RecordDiverged(f"Tool {tool.name} was not called at this point of the record.")
        stored = self.tools[number]
        if stored.tool_name != tool.name:
            raise RecordDiverged(f"Tool call {number + 1} of the invocation is {tool.name} now, {stored.tool_name} in the record.")
        if tool.name == TRANSFER_TOOL:
            return None  # the hand-over itself: ADK's own tool sets it
        for key, value in stored.state_delta.items():
            tool_context.state[key] = value
        return stored.result if isinstance(stored.result, dict) else {"result": stored.result}


def parse_json_field(name: str, text: str) -> Any:
    """A form's JSON field, or EditError naming it."""
    try:
        return limits.loads(text, name)
    except json.JSONDecodeError as exc:
        raise EditError(name, f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None


# ---- comparing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CallTotals:
    """The model calls of one side's edited turn: how many reached a model, their tokens and cost."""

    calls: int
    prompt_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: no call of a priced model


def call_totals(session: Session, invocation_ids: list[str]) -> CallTotals:
    prices = health.model_prices()
    calls = ModelCall.objects.filter(session=session, invocation_id__in=invocation_ids).only(
        "model", "prompt_tokens", "output_tokens", "cached_tokens")
    prompt = output = 0
    cost: float | None = None
    count = 0
    for call in calls:
        count += 1
        prompt += call.prompt_tokens or 0
        output += call.output_tokens or 0
        price = health.price_for(call.model, prices)
        if price is not None:
            cost = (cost or 0.0) + health.response_cost(
                price, prompt=call.prompt_tokens or 0, output=call.output_tokens or 0, cached=call.cached_tokens or 0)
    return CallTotals(calls=count, prompt_tokens=prompt, output_tokens=output, cost_usd=cost)


def comparison(fork: Session) -> dict[str, Any]:
    """The fork beside its original from the edited turn on, in the replay comparison's terms."""
    original = fork.forked_from
    if original is None or fork.edited_call_pk is None:
        raise EditError("session", f"Session {fork.session_id!r} is not an edit-and-continue fork, or its original was deleted.")
    running = is_running(fork)  # read before the turns, as the replay comparison does
    original_turns, _, original_cut = turns_of(original)
    fork_turns, _, fork_cut = turns_of(fork)
    edited_turn = sum(1 for t in fork_turns if t.user_seq <= (fork.forked_at_seq or 0)) + 1
    diffs: list[TurnDiff] = compare(original_turns, fork_turns)[edited_turn - 1: max(len(fork_turns), edited_turn)]
    edited = ModelCall.objects.filter(pk=fork.edited_call_pk).only("invocation_id").first()
    fork_invocations = list(Event.objects.filter(session=fork, seq__gt=fork.forked_at_seq or 0).exclude(
        invocation_id__startswith=selectors.STATE_UPDATE_INVOCATION_PREFIX).values_list("invocation_id", flat=True).distinct())
    return {
        "original": original,
        "replay": fork,
        "fork": fork,
        "diffs": diffs,
        "changed_count": sum(1 for d in diffs if d.changed or d.shared.is_changed),
        "status": {"running": running},
        "truncated": original_cut or fork_cut,
        "shared_counts": True,
        "replay_label": "fork",
        "totals_rows": [("original", call_totals(original, [edited.invocation_id] if edited else [])),
                        ("fork", call_totals(fork, fork_invocations))],
    }
