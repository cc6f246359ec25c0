"""Spans and logs from agents' OpenTelemetry exporters, placed beside the sessions they name.

ADK 2.x's spans (`invoke_workflow`, `invoke_agent`, `generate_content`,
`execute_tool`) become the same agent-run, model-call and tool-call records
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

ADK_OPERATIONS = {"invoke_workflow", "invoke_agent", "generate_content", "execute_tool"}
TRACE_ONLY = "otlp"
TRACE_ONLY_USER = "otlp"
_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_ROLES = {"assistant": "model", "model": "model", "user": "user", "tool": "user", "system": "user"}


def spans_ingest(*, spans: list[SpanData]) -> int:
    """Store ADK's spans (others are the web framework's, not adkui's to show),
    once each, and place those whose session is known now; the number stored."""
    adk = [s for s in spans if s.attributes.get("gen_ai.operation.name") in ADK_OPERATIONS]
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
        _place(trace_id)
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
        operation=str(attributes.get("gen_ai.operation.name")), started_at=span.started_at,
        duration_ms=span.duration_ms, error=span.error, attributes=attributes, service_name=span.service_name[:255],
        conversation_id=str(attributes.get("gen_ai.conversation.id") or "")[:255],
    )


@transaction.atomic
def _place(trace_id: str) -> None:
    rows = list(TraceSpan.objects.select_for_update().filter(trace_id=trace_id).order_by("started_at", "pk"))
    conversation = next((r.conversation_id for r in rows if r.conversation_id), "")
    waiting = [r for r in rows if not r.placed]
    if not conversation or not waiting:
        return
    session = _session_for(conversation, rows)
    invocations = _invocations(rows)
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
    app_name = service or workflow or TRACE_ONLY
    return session_services.session_create(
        app_name=app_name[:255], user_id=TRACE_ONLY_USER, session_id=conversation, imported_from=TRACE_ONLY
    )


def _invocations(rows: list[TraceSpan]) -> dict[str, str]:
    """Each span's invocation: model calls carry it; an agent run takes its model
    calls', a tool call its agent run's, a workflow its agents'."""
    found = {r.span_id: str(r.attributes["gcp.vertex.agent.invocation_id"])
             for r in rows if r.attributes.get("gcp.vertex.agent.invocation_id")}
    children: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        children[row.parent_span_id].append(row.span_id)
    for operation in ("invoke_agent", "invoke_workflow"):
        for row in rows:
            if row.operation == operation and row.span_id not in found:
                child = next((found[c] for c in children[row.span_id] if c in found), "")
                found[row.span_id] = child
    for row in rows:
        if row.operation == "execute_tool" and not found.get(row.span_id):
            found[row.span_id] = found.get(row.parent_span_id, "")
    return found


def _record(row: TraceSpan, session: Session, invocation_id: str) -> None:
    attributes = row.attributes
    span = services.Span(
        key=SessionKey(session.app.name, session.user_id, session.session_id), session_pk=session.pk,
        invocation_id=invocation_id, span_id=row.span_id, parent_span_id=row.parent_span_id,
        agent_name=str(attributes.get("gen_ai.agent.name") or attributes.get("gen_ai.workflow.name") or "")[:255],
        branch=None, started_at=row.started_at, duration_ms=row.duration_ms, error=row.error,
    )
    if row.operation == "generate_content":
        services.model_call_record(span=span, event_id=str(attributes.get("gcp.vertex.agent.event_id") or ""),
                                   request=_request(attributes), response=_response(attributes))
    elif row.operation == "execute_tool":
        services.tool_call_record(
            span=span, tool_name=str(attributes.get("gen_ai.tool.name") or row.name),
            function_call_id=str(attributes.get("gen_ai.tool.call.id") or ""),
            args=_json(attributes.get("gen_ai.tool.call.arguments"), {}),
            result=_json(attributes.get("gen_ai.tool.call.result"), None),
            event_id=str(attributes.get("gcp.vertex.agent.event_id") or ""),
        )
    else:
        services.agent_run_record(span=span)


def _request(attributes: dict[str, Any]) -> dict[str, Any]:
    instructions = _json(attributes.get("gen_ai.system_instructions"), [])
    return {
        "model": str(attributes.get("gen_ai.request.model") or ""),
        "system_instruction": "\n\n".join(str(p.get("content", "")) for p in instructions if isinstance(p, dict)),
        "contents": [_content(m) for m in _json(attributes.get("gen_ai.input.messages"), []) if isinstance(m, dict)],
        "tools": [_tool(t) for t in _json(attributes.get("gen_ai.tool.definitions"), []) if isinstance(t, dict)],
        "config": {},
    }


def _response(attributes: dict[str, Any]) -> dict[str, Any]:
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
        if row.operation == "generate_content":
            first_call.setdefault(invocations.get(row.span_id, ""), row.span_id)
    events = []
    for row in waiting:
        invocation = invocations.get(row.span_id, "")
        if row.operation == "generate_content":
            if first_call.get(invocation) == row.span_id:
                events.append(_user_event(row, invocation))
            events.append(_model_event(row, invocation))
        elif row.operation == "execute_tool":
            events.append(_tool_event(row, invocation))
    stored = set(session.events.values_list("event_id", flat=True))
    calls = _open_calls(session, {invocations.get(r.span_id, "") for r in waiting})
    for data in sorted((e for e in events if e is not None), key=lambda e: e["timestamp"]):
        if data["id"] in stored:
            continue
        _pair(data, calls)
        try:
            event = AdkEvent.model_validate(data)
        except ValidationError:  # content an exporter cut short: the record keeps what came
            continue
        session_services.event_append(key=key, event=event)
        stored.add(data["id"])


def _open_calls(session: Session, invocation_ids: set[str]) -> dict[str, list[str]]:
    """The ids of the function calls each tool name has waiting for a response, in the invocations' stored events."""
    calls: dict[str, list[str]] = defaultdict(list)
    for data in session.events.filter(invocation_id__in=invocation_ids).order_by("seq").values_list("data", flat=True):
        _pair(data, calls)
    return calls


def _pair(event: dict[str, Any], calls: dict[str, list[str]]) -> None:
    """Note a reply's function calls; give a tool's response the id of the call it
    answers. The content's call ids are the instrumentation's own (`plan_trip_0`),
    the tool span's are ADK's: responses take the calls' so the two pair up."""
    for part in (event.get("content") or {}).get("parts") or []:
        call, response = part.get("function_call"), part.get("function_response")
        if call and call.get("id"):
            calls[str(call.get("name"))].append(str(call["id"]))
        elif response and calls.get(str(response.get("name"))):
            response["id"] = calls[str(response.get("name"))].pop(0)


def _user_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    messages = [m for m in _json(row.attributes.get("gen_ai.input.messages"), []) if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user" and any(
        isinstance(p, dict) and p.get("type") == "text" for p in m.get("parts") or [])]
    if not users:
        return None
    return {"id": f"{invocation or row.span_id}-user", "invocation_id": invocation, "author": "user",
            "timestamp": row.started_at, "content": _content(users[-1])}


def _model_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    """The reply; without captured content, still the event (its tokens, and the
    way from the timeline to the invocation's trace), with no content."""
    event_id = row.attributes.get("gcp.vertex.agent.event_id")
    if not event_id:
        return None
    response = _response(row.attributes)
    return {"id": str(event_id), "invocation_id": invocation, "author": str(row.attributes.get("gen_ai.agent.name") or "model"),
            "timestamp": row.started_at + row.duration_ms / 1000, "content": response.get("content"),
            "usage_metadata": response["usage_metadata"] or None, "model_version": response["model_version"] or None,
            "error_code": response.get("error_code") or ("ERROR" if row.error else None), "error_message": row.error or None}


def _tool_event(row: TraceSpan, invocation: str) -> dict[str, Any] | None:
    attributes = row.attributes
    result, event_id = _json(attributes.get("gen_ai.tool.call.result"), None), attributes.get("gcp.vertex.agent.event_id")
    if result is None or not event_id:
        return None
    response = {"id": attributes.get("gen_ai.tool.call.id"), "name": attributes.get("gen_ai.tool.name"),
                "response": result if isinstance(result, dict) else {"result": result}}
    return {"id": str(event_id), "invocation_id": invocation, "author": str(attributes.get("gen_ai.agent.name") or "tool"),
            "timestamp": row.started_at + row.duration_ms / 1000,
            "content": {"role": "user", "parts": [{"function_response": response}]}}

