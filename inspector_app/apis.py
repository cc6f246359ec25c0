"""ADK's trace routes, answered from the recorder's rows: adk-web's Trace tab and each event's Request/Response.

ADK's dev server keeps the OpenTelemetry spans of the runs it served in memory
and loses them on restart (`DevServer`, google/adk/cli/dev_server.py). Ours are
the inspector's records, kept with the session: each agent run, model call and
tool call becomes the span ADK's tracing makes of it (`invoke_agent`,
`generate_content <model>`, `execute_tool <tool>`, with ADK's attribute names),
under one root span per invocation whose trace id is the invocation id. The
model's request and response ride in ADK's `gcp.vertex.agent.llm_request` and
`gcp.vertex.agent.llm_response` attributes, which adk-web shows as the event's
Request and Response. Ids are strings (adk-web takes strings or numbers):
ours are 128-bit, which a JavaScript number would round.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from adk_compat import gen_ai_provider_name
from sessions_app.apis.base import AdkApi

from . import selectors, trace
from .models import AgentRun, ModelCall, Recorded, ToolCall

# ADK's span attribute names (google/adk/telemetry), as adk-web reads them.
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
INVOCATION = "gcp.vertex.agent.invocation_id"
EVENT = "gcp.vertex.agent.event_id"
LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
NS_PER_SECOND = 1_000_000_000
OUR_REQUEST_KEYS = ("spans", "templates")  # the inspector's placeholder marks, not part of what was sent


@extend_schema_serializer(component_name="TraceSpan")
class SpanSerializer(serializers.Serializer):
    """One span as ADK's dev server sends it (its `WebUiSpan`), times in nanoseconds since 1970."""

    name = serializers.CharField()
    start_time = serializers.IntegerField()
    end_time = serializers.IntegerField()
    trace_id = serializers.CharField(help_text="The invocation id.")
    span_id = serializers.CharField()
    parent_span_id = serializers.CharField(allow_null=True)
    attributes = serializers.DictField()
    logs = serializers.ListField(child=serializers.DictField())


class SessionTraceApi(AdkApi):
    @extend_schema(operation_id="debug_session_trace", tags=["debug"], responses={200: SpanSerializer(many=True)})
    def get(self, request: Request, app_name: str, session_id: str) -> Response:
        """Every recorded span of the session, oldest first ([] when nothing was recorded), as ADK's
        `GET /dev/apps/{app}/debug/trace/session/{session_id}` answers; kept across restarts."""
        return Response(session_spans(app_name=app_name, session_id=session_id))


class EventTraceApi(AdkApi):
    @extend_schema(
        operation_id="debug_event_trace", tags=["debug"],
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The attributes of the span that "
                                        "produced the event, with its trace_id and span_id."),
                   404: OpenApiResponse(description='{"detail": "Trace not found"}')},
    )
    def get(self, request: Request, app_name: str, event_id: str) -> Response:
        """The attributes of the model call (else tool call) that produced the event, as ADK's
        `GET /dev/apps/{app}/debug/trace/{event_id}` answers."""
        record = selectors.event_recording(app_name=app_name, event_id=event_id)
        if record is None:
            raise NotFound("Trace not found")
        _, attributes = _name_and_attributes(record, record.adk_session_id)
        return Response({**attributes, "trace_id": record.invocation_id, "span_id": record.span_id})


# ---- records as spans -----------------------------------------------------------


def session_spans(*, app_name: str, session_id: str) -> list[dict[str, Any]]:
    agents, models, tools = selectors.session_recordings(app_name=app_name, session_id=session_id)
    by_invocation: dict[str, list[Recorded]] = defaultdict(list)
    for record in [*agents, *models, *tools]:
        by_invocation[record.invocation_id].append(record)
    spans = [span for records in by_invocation.values() for span in _invocation_spans(session_id, records)]
    return sorted(spans, key=lambda span: (span["start_time"], span["parent_span_id"] is not None))


def _invocation_spans(session_id: str, records: list[Recorded]) -> list[dict[str, Any]]:
    """The invocation's root span, then one span per record; a record whose parent was not
    recorded (or never finished) hangs from the root."""
    invocation_id = records[0].invocation_id
    start = min(r.started_at for r in records)
    end = max(trace.end_of(r, start) for r in records)
    root = _span("invocation", invocation_id, invocation_id, None, (start, end),
                 {CONVERSATION: session_id, INVOCATION: invocation_id})
    known = {r.span_id for r in records}
    spans = [root]
    for record in records:
        name, attributes = _name_and_attributes(record, session_id)
        own_parent = record.parent_span_id in known and record.parent_span_id != record.span_id  # not in corrupt data
        parent = record.parent_span_id if own_parent else invocation_id
        # A record that never finished lasts until the invocation's last one ended, as the inspector draws it.
        times = (record.started_at, trace.end_of(record, end))
        spans.append(_span(name, invocation_id, record.span_id, parent, times, attributes))
    return spans


def _span(name: str, trace_id: str, span_id: str, parent: str | None, times: tuple[float, float],
          attributes: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name, "start_time": _ns(times[0]), "end_time": _ns(times[1]), "trace_id": trace_id,
        "span_id": span_id, "parent_span_id": parent, "attributes": attributes, "logs": [],
    }


def _ns(seconds: float) -> int:
    return int(round(seconds * NS_PER_SECOND))


def _name_and_attributes(record: Recorded, session_id: str) -> tuple[str, dict[str, Any]]:
    common = {AGENT_NAME: record.agent_name, CONVERSATION: session_id, INVOCATION: record.invocation_id}
    if record.error:
        common["error.type"] = record.error.split(":", 1)[0]
    if isinstance(record, ModelCall):
        return f"generate_content {record.model}".strip(), {OPERATION: "generate_content", **common,
                                                             **_model_attributes(record)}
    if isinstance(record, ToolCall):
        return f"execute_tool {record.tool_name}", {OPERATION: "execute_tool", **common, **_tool_attributes(record)}
    return f"invoke_agent {record.agent_name}", {OPERATION: "invoke_agent", **common, **_agent_attributes(record)}


def _agent_attributes(run: AgentRun) -> dict[str, Any]:
    return {} if run.description is None else {"gen_ai.agent.description": run.description}


def _model_attributes(call: ModelCall) -> dict[str, Any]:
    # adk-web validates these: numbers or absent, never null.
    optional = {
        "gen_ai.usage.input_tokens": call.prompt_tokens,
        "gen_ai.usage.output_tokens": call.output_tokens,
        "gen_ai.response.finish_reasons": [call.finish_reason.lower()] if call.finish_reason else None,
    }
    sent = {k: v for k, v in call.request.items() if k not in OUR_REQUEST_KEYS}
    definitions = _tool_definitions(call.request.get("tools"))
    return {
        "gen_ai.request.model": call.model, "gen_ai.provider.name": gen_ai_provider_name(call.model or None),
        EVENT: call.event_id,
        **{k: v for k, v in optional.items() if v is not None},
        **({TOOL_DEFINITIONS: _compact_json(definitions)} if definitions else {}),
        LLM_REQUEST: json.dumps(sent, ensure_ascii=False), LLM_RESPONSE: json.dumps(call.response, ensure_ascii=False),
    }


def _tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """ADK's `gen_ai.tool.definitions` of the request's tools, as its dev server gives them (without content
    capture: no parameters): a declared function's name, description and type "function"; a built-in
    tool (google_search, code_execution, ...) its kind as name and type."""
    definitions: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        if tool.get("kind") == "builtin":
            definitions.append({"name": tool.get("name"), "type": tool.get("name")})
        else:  # a declaration, or a raw callable ADK describes as a function too
            definitions.append({"name": tool.get("name"), "description": tool.get("description") or None,
                                "parameters": None, "type": "function"})
    return definitions


def _compact_json(value: Any) -> str:
    """JSON as ADK's telemetry writes an attribute that is not a plain value: no spaces, text as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _tool_attributes(call: ToolCall) -> dict[str, Any]:
    kept = {"gen_ai.tool.type": call.tool_type, "gen_ai.tool.description": call.tool_description}
    return {
        **{k: v for k, v in kept.items() if v is not None},
        "gen_ai.tool.name": call.tool_name, "gen_ai.tool.call.id": call.function_call_id, EVENT: call.event_id,
        "gcp.vertex.agent.tool_call_args": json.dumps(call.args, ensure_ascii=False),
        "gcp.vertex.agent.tool_response": json.dumps(call.result, ensure_ascii=False),
    }
