"""Spans and logs from agents' OpenTelemetry exporters, placed beside the sessions they name.

ADK 2.13's spans, in its telemetry schema v2 (the default: `invoke_workflow`,
`invoke_agent`, `generate_content`, `execute_tool`) or v1
(`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`: `invocation`, `invoke_agent`,
`call_llm` with ADK's own request and response JSON, `execute_tool`), become the same agent-run, model-call and tool-call records
the recorder keeps for runs in adkui, so the inspector and the invocation
trace show them. A span names its session by `gen_ai.conversation.id` (ADK's
session id); spans without one (tool calls) share their trace's. A span that
comes before any span of its trace names the session waits, stored, until one
does. A session adkui has never seen becomes a trace-only session (`imported_from`
"otlp", its app the exporter's `service.name` or the workflow's name); where
the agent captured message content
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY` or
`SPAN_AND_EVENT`), its user messages, model replies and tool results are
rebuilt into events through the one write path.
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

from django.db import transaction
from google.adk.events.event import Event as AdkEvent
from pydantic import ValidationError

from sessions_app import services as session_services
from sessions_app.keys import SessionKey
from sessions_app.models import Session

from . import services
from .models import ModelCall, TraceSpan
from .otlp import LogData, SpanData

logger = logging.getLogger(__name__)
ADK_OPERATIONS = {"invoke_workflow", "invoke_agent", "generate_content", "execute_tool", "call_llm", "invocation"}
# Schema v1's spans have no gen_ai.operation.name; their names say what they are.
V1_SPANS = {"call_llm": "call_llm", "invocation": "invocation"}
MODEL_OPERATIONS = ("generate_content", "call_llm")
RUN_OPERATIONS = ("invoke_agent", "invoke_workflow", "invocation")
TRACE_ONLY = "otlp"
TRACE_ONLY_USER = "otlp"
_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_ROLES = {"assistant": "model", "model": "model", "user": "user", "tool": "user", "system": "user"}


def spans_ingest(*, spans: list[SpanData]) -> int:
    """Store ADK's spans (others are the web framework's, not adkui's to show),
    once each, and place those whose session is known now; the number stored."""
    adk = [s for s in spans if _operation(s.name, s.attributes) in ADK_OPERATIONS]
    if not adk:
        return 0
    with transaction.atomic():
        seen = set(
            TraceSpan.objects.filter(trace_id__in={s.trace_id for s in adk}, span_id__in={s.span_id for s in adk})
            .values_list("trace_id", "span_id")
        )
        new = {(s.trace_id, s.span_id): s for s in adk if (s.trace_id, s.span_id) not in seen}
        TraceSpan.objects.bulk_create([_row(s) for s in new.values()])
    for trace_id in sorted({trace for trace, _ in new}):
        try:
            _place(trace_id)
        except Exception:  # spans of a shape not foreseen: kept, unplaced, and the exporter told it was stored
            logger.exception("Could not place the spans of trace %s; they stay stored.", trace_id)
    return len(new)


def logs_ingest(*, records: list[LogData]) -> int:
    """Message content that an exporter sent as log events (EVENT_ONLY) joins its
    model call's span; the number of spans it joined."""
    content = {r.span_id: {k: r.attributes[k] for k in _CONTENT_KEYS if k in r.attributes} for r in records}
    content = {span_id: values for span_id, values in content.items() if span_id and values}
    joined = 0
    with transaction.atomic():
        for row in TraceSpan.objects.select_for_update().filter(span_id__in=content):
            row.attributes = content[row.span_id] | row.attributes
            row.save(update_fields=["attributes"])
            if row.placed:
                ModelCall.objects.filter(session=row.session, span_id=row.span_id).update(
                    request=_request(row.attributes), response=_response(row.attributes))
            joined += 1
    return joined


def _row(span: SpanData) -> TraceSpan:
    attributes = span.attributes
    return TraceSpan(
        trace_id=span.trace_id, span_id=span.span_id, parent_span_id=span.parent_span_id, name=span.name[:255],
        operation=_operation(span.name, attributes), started_at=span.started_at,
        duration_ms=span.duration_ms, error=span.error, attributes=attributes, service_name=span.service_name[:255],
        conversation_id=str(attributes.get("gen_ai.conversation.id") or attributes.get("gcp.vertex.agent.session_id")
                            or "")[:255],
    )


def _operation(name: str, attributes: dict[str, Any]) -> str:
    return str(attributes.get("gen_ai.operation.name") or V1_SPANS.get(name, ""))


def _legacy_unfinished(rows: list[TraceSpan]) -> bool:
    """A schema v1 trace whose `invocation` span has not come: its `call_llm`
    spans end only after the tools they asked for, so a reply could otherwise
    be placed after its tool's response. The invocation span ends last."""
    legacy = any(r.operation in V1_SPANS or _instrumentation_copy(r) for r in rows)
    return legacy and not any(r.operation == "invocation" for r in rows)


def _instrumentation_copy(row: TraceSpan) -> bool:
    """Schema v1's `generate_content` span: google-genai's instrumentation's
    child of ADK's `call_llm`, which carries the same call whole (it names a
    `gen_ai.system`, where v2's names a `gen_ai.provider.name`)."""
    attributes = row.attributes
    return (row.operation == "generate_content" and "gen_ai.system" in attributes
            and "gen_ai.provider.name" not in attributes and "gen_ai.output.messages" not in attributes)


@transaction.atomic
def _place(trace_id: str) -> None:
    rows = list(TraceSpan.objects.select_for_update().filter(trace_id=trace_id).order_by("started_at", "pk"))
    conversation = next((r.conversation_id for r in rows if r.conversation_id), "")
    waiting = [r for r in rows if not r.placed]
    if not conversation or not waiting or _legacy_unfinished(rows):
        return
    session = _session_for(conversation, rows)
    invocations = _invocations(rows)
    _inherit_agent_names(rows)
    for row in waiting:
        _record(row, session, invocations.get(row.span_id, ""))
    if session.imported_from == TRACE_ONLY:
        _rebuild_events(session, waiting, rows, invocations)
    TraceSpan.objects.filter(pk__in=[r.pk for r in waiting]).update(placed=True, session=session)


def _session_for(conversation: str, rows: list[TraceSpan]) -> Session:
    """The session the spans name: ours when we have it (the newest, should two
    apps share the id), else a new trace-only one."""
    found = Session.objects.filter(session_id=conversation).select_related("app").order_by("-update_time").first()
    if found is not None:
        return found
    service = next((r.service_name for r in rows if r.service_name and r.service_name != "unknown_service"), "")
    workflow = next((str(r.attributes.get("gen_ai.workflow.name") or "") for r in rows
                     if r.operation == "invoke_workflow" and not r.parent_span_id), "")
    workflow = workflow or next((str(r.attributes.get("gen_ai.workflow.name") or "") for r in rows), "")
    agent = next((str(r.attributes.get("gen_ai.agent.name") or "") for r in rows if r.operation == "invoke_agent"), "")
    app_name = service or workflow or agent or TRACE_ONLY
    return session_services.session_create(
        app_name=app_name[:255], user_id=TRACE_ONLY_USER, session_id=conversation, imported_from=TRACE_ONLY
    )


def _inherit_agent_names(rows: list[TraceSpan]) -> None:
    """Schema v1's `call_llm` names no agent: it is its parent agent run's (in memory only)."""
    names = {r.span_id: r.attributes.get("gen_ai.agent.name") for r in rows}
    for row in rows:
        if not row.attributes.get("gen_ai.agent.name") and names.get(row.parent_span_id):
            row.attributes = row.attributes | {"gen_ai.agent.name": names[row.parent_span_id]}


def _invocations(rows: list[TraceSpan]) -> dict[str, str]:
    """Each span's invocation: model calls carry it; an agent run takes its model
    calls', a tool call its agent run's, a workflow its agents'."""
    found = {r.span_id: str(r.attributes["gcp.vertex.agent.invocation_id"])
             for r in rows if r.attributes.get("gcp.vertex.agent.invocation_id")}
    children: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        children[row.parent_span_id].append(row.span_id)
    for operation in RUN_OPERATIONS:
        for row in rows:
            if row.operation == operation and row.span_id not in found:
                child = next((found[c] for c in children[row.span_id] if c in found), "")
                found[row.span_id] = child
    # One request, one trace, one invocation: where the trace names only one,
    # a span whose own place does not say it yet (its parent not come) is in it.
    only = next(iter(set(found.values()) - {""})) if len(set(found.values()) - {""}) == 1 else ""
    for row in rows:
        if not found.get(row.span_id):
            found[row.span_id] = found.get(row.parent_span_id) or only
    return found


def _record(row: TraceSpan, session: Session, invocation_id: str) -> None:
    attributes = row.attributes
    span = services.Span(
        key=SessionKey(session.app.name, session.user_id, session.session_id), session_pk=session.pk,
        invocation_id=invocation_id, span_id=row.span_id, parent_span_id=row.parent_span_id,
        agent_name=str(attributes.get("gen_ai.agent.name") or attributes.get("gen_ai.workflow.name")
                       or (row.name if row.operation == "invocation" else ""))[:255],
        branch=None, started_at=row.started_at, duration_ms=row.duration_ms, error=row.error,
    )
    if _instrumentation_copy(row):
        return
    if row.operation in MODEL_OPERATIONS:
        services.model_call_record(span=span, event_id=str(attributes.get("gcp.vertex.agent.event_id") or ""),
                                   request=_request(attributes), response=_response(attributes))
    elif row.operation == "execute_tool":
        services.tool_call_record(
            span=span, tool_name=str(attributes.get("gen_ai.tool.name") or row.name),
            function_call_id=str(attributes.get("gen_ai.tool.call.id") or ""),
            args=_json(attributes.get("gen_ai.tool.call.arguments", attributes.get("gcp.vertex.agent.tool_call_args")), {}),
            result=_tool_result(attributes),
            event_id=str(attributes.get("gcp.vertex.agent.event_id") or ""),
        )
    else:
        services.agent_run_record(span=span)


def _tool_result(attributes: dict[str, Any]) -> Any:
    return _json(attributes.get("gen_ai.tool.call.result", attributes.get("gcp.vertex.agent.tool_response")), None)


def _request(attributes: dict[str, Any]) -> dict[str, Any]:
    adk_request = _json(attributes.get("gcp.vertex.agent.llm_request"), {})
    if isinstance(adk_request, dict) and adk_request:  # schema v1: ADK's own LlmRequest, as JSON
        config = adk_request.get("config") or {}
        instruction = config.get("system_instruction")
        return {"model": str(adk_request.get("model") or ""),
                "system_instruction": instruction if isinstance(instruction, str) else json.dumps(instruction or ""),
                "contents": [c for c in adk_request.get("contents") or [] if isinstance(c, dict)], "tools": [],
                "config": {}}
    instructions = _json(attributes.get("gen_ai.system_instructions"), [])
    return {
        "model": str(attributes.get("gen_ai.request.model") or ""),
        "system_instruction": "\n\n".join(str(p.get("content", "")) for p in instructions if isinstance(p, dict)),
        "contents": [_content(m) for m in _json(attributes.get("gen_ai.input.messages"), []) if isinstance(m, dict)],
        "tools": [_tool(t) for t in _json(attributes.get("gen_ai.tool.definitions"), []) if isinstance(t, dict)],
        "config": {},
    }


def _response(attributes: dict[str, Any]) -> dict[str, Any]:
    adk_response = _json(attributes.get("gcp.vertex.agent.llm_response"), {})
    if isinstance(adk_response, dict) and adk_response:  # schema v1: ADK's own LlmResponse, as JSON
        return adk_response
    outputs = [m for m in _json(attributes.get("gen_ai.output.messages"), []) if isinstance(m, dict)]
    reasons = attributes.get("gen_ai.response.finish_reasons") or []
    prompt, output = attributes.get("gen_ai.usage.input_tokens"), attributes.get("gen_ai.usage.output_tokens")
    usage = {"prompt_token_count": prompt, "candidates_token_count": output,
             "cached_content_token_count": attributes.get("gen_ai.usage.cache_read.input_tokens"),
             "thoughts_token_count": attributes.get("gen_ai.usage.reasoning.output_tokens"),
             "total_token_count": (prompt or 0) + (output or 0) if prompt is not None or output is not None else None}
    response: dict[str, Any] = {
        "model_version": str(attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model") or ""),
        "finish_reason": str(reasons[0]).upper() if reasons else "",
        "usage_metadata": {k: v for k, v in usage.items() if v is not None},
    }
    if outputs:
        response["content"] = _content(outputs[0])
    if attributes.get("error.type"):
        response["error_code"] = str(attributes["error.type"])
    return response


def _content(message: dict[str, Any]) -> dict[str, Any]:
    """A GenAI semantic-conventions message as google-genai's Content (JSON)."""
    role = _ROLES.get(str(message.get("role")), "user")
    return {"role": role, "parts": [_part(p) for p in message.get("parts") or [] if isinstance(p, dict)]}


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"text": str(part.get("content", ""))}
    if kind == "tool_call":
        return {"function_call": {"id": part.get("id"), "name": part.get("name"), "args": part.get("arguments") or {}}}
    if kind == "tool_call_response":
        response = part.get("response")
        return {"function_response": {"id": part.get("id"), "name": part.get("name") or "",
                                      "response": response if isinstance(response, dict) else {"result": response}}}
    return {"text": json.dumps(part, ensure_ascii=False, default=str)}


def _tool(definition: dict[str, Any]) -> dict[str, Any]:
    return {"name": str(definition.get("name", "")), "kind": "function",
            "description": str(definition.get("description", "")), "parameters": definition.get("parameters")}


def _json(value: Any, default: Any) -> Any:
    """An attribute that carries JSON as a string (span) or as structure (log)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return default if value is None else value


def _rebuild_events(session: Session, waiting: list[TraceSpan], rows: list[TraceSpan],
                    invocations: dict[str, str]) -> None:
    """A trace-only session's events, from the content its spans carry."""
    key = SessionKey(session.app.name, session.user_id, session.session_id)
    first_call = {}
    for row in rows:
        if row.operation in MODEL_OPERATIONS and not _instrumentation_copy(row):
            first_call.setdefault(invocations.get(row.span_id, ""), row.span_id)
    events = []
    for row in waiting:
        invocation = invocations.get(row.span_id, "")
        if row.operation in MODEL_OPERATIONS and not _instrumentation_copy(row):
            if first_call.get(invocation) == row.span_id:
                events.append(_user_event(row, invocation))
            events.append(_model_event(row, invocation))
        elif row.operation == "execute_tool":
            events.append(_tool_event(row, invocation))
    events = [e for e in events if e is not None]
    # Only the candidates' ids: a long session's every id would be read per batch.
    stored = set(session.events.filter(event_id__in=[e["id"] for e in events]).values_list("event_id", flat=True))
    calls = _open_calls(session, {invocations.get(r.span_id, "") for r in waiting})
    events = sorted((e for e in events if e["id"] not in stored), key=lambda e: e["timestamp"])
    for data in events:  # all paired first: a call may take the id of a response that comes after it
        calls.pair(data)
    for data in events:
        if data["id"] in stored:
            continue
        try:
            event = AdkEvent.model_validate(data)
        except ValidationError:  # content an exporter cut short: the record keeps what came
            continue
        session_services.event_append(key=key, event=event)
        stored.add(data["id"])


class _Calls:
    """Function calls waiting for their response, per tool name, so the two pair up.

    Schema v2's content gives calls the instrumentation's own ids (`plan_trip_0`)
    and its tool spans ADK's: a response takes its call's id. Schema v1's calls
    have none: a call takes its response's (ADK's) id, when both come together.
    """

    def __init__(self) -> None:
        self.with_id: dict[str, list[str]] = defaultdict(list)
        self.without_id: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def pair(self, event: dict[str, Any]) -> None:
        for part in (event.get("content") or {}).get("parts") or []:
            call, response = part.get("function_call"), part.get("function_response")
            if call:
                name = str(call.get("name"))
                if call.get("id"):
                    self.with_id[name].append(str(call["id"]))
                else:
                    self.without_id[name].append(call)
            elif response:
                name = str(response.get("name"))
                if self.with_id[name]:
                    response["id"] = self.with_id[name].pop(0)
                elif self.without_id[name]:
                    self.without_id[name].pop(0)["id"] = response.get("id")


def _open_calls(session: Session, invocation_ids: set[str]) -> _Calls:
    """The calls of the invocations' stored events still waiting for a response."""
    calls = _Calls()
    for data in session.events.filter(invocation_id__in=invocation_ids).order_by("seq").values_list("data", flat=True):
        calls.pair(data)
    calls.without_id.clear()  # stored already: their ids can no longer change
    return calls


def _user_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    contents = _request(row.attributes)["contents"]
    users = [c for c in contents if c.get("role") == "user" and any(
        isinstance(p, dict) and p.get("text") for p in c.get("parts") or [])]
    if not users:
        return None
    return {"id": f"{invocation or row.span_id}-user", "invocation_id": invocation, "author": "user",
            "timestamp": row.started_at, "content": users[-1]}


def _model_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    """The reply; without captured content, still the event (its tokens, and the
    way from the timeline to the invocation's trace), with no content."""
    event_id = row.attributes.get("gcp.vertex.agent.event_id")
    if not event_id:
        return None
    response = _response(row.attributes)
    return {"id": str(event_id), "invocation_id": invocation, "author": str(row.attributes.get("gen_ai.agent.name") or "model"),
            # v1's call_llm lasts until the tools it asked for have run: its reply came before them.
            "timestamp": row.started_at + (1e-6 if row.operation == "call_llm" else row.duration_ms / 1000),
            "content": response.get("content"),
            "usage_metadata": response.get("usage_metadata") or None, "model_version": response.get("model_version") or None,
            "error_code": response.get("error_code") or ("ERROR" if row.error else None), "error_message": row.error or None}


def _tool_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    attributes = row.attributes
    result, event_id = _tool_result(attributes), attributes.get("gcp.vertex.agent.event_id")
    if result is None or not event_id:
        return None
    response = {"id": attributes.get("gen_ai.tool.call.id"), "name": attributes.get("gen_ai.tool.name"),
                "response": result if isinstance(result, dict) else {"result": result}}
    return {"id": str(event_id), "invocation_id": invocation, "author": str(attributes.get("gen_ai.agent.name") or "tool"),
            "timestamp": row.started_at + row.duration_ms / 1000,
            "content": {"role": "user", "parts": [{"function_response": response}]}}

