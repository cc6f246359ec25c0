"""OTLP/HTTP ingest: ADK's spans, as protobuf or JSON (hex ids, gzip), become the
session's trace records, and a session adkui never saw is rebuilt from the
content they carry; a bad body is refused with its reason and stores nothing."""
from __future__ import annotations

import base64
import gzip
import json

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from inspector_app.models import AgentRun, ModelCall, ToolCall, TraceSpan
from sessions_app.models import Session

pytestmark = pytest.mark.django_db
TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
T0 = 1_790_000_000_000_000_000  # ns
INVOCATION = "e-123"


def _span(span_id: str, parent: str, name: str, start_ms: int, end_ms: int, **attributes: object) -> Span:
    values = [KeyValue(key=k, value=AnyValue(**_any(v))) for k, v in attributes.items()]
    return Span(trace_id=TRACE, span_id=bytes.fromhex(span_id), parent_span_id=bytes.fromhex(parent) if parent else b"",
                name=name, start_time_unix_nano=T0 + start_ms * 1_000_000, end_time_unix_nano=T0 + end_ms * 1_000_000,
                attributes=values)


def _any(value: object) -> dict:
    return {"int_value": value} if isinstance(value, int) else {"string_value": str(value)}


def adk_spans() -> list[Span]:
    """One turn of the demo agent as ADK 2.13 exports it (content captured on spans)."""
    agent, conv = "00000000000000a1", {"gen_ai.conversation.id": "otel-s1"}
    model = {"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "scripted",
             "gen_ai.agent.name": "trip_planner", "gcp.vertex.agent.invocation_id": INVOCATION, **conv}
    return [
        _span("00000000000000b1", agent, "generate_content scripted", 10, 20, **model,
              **{"gcp.vertex.agent.event_id": "ev-call", "gen_ai.usage.input_tokens": 214,
                 "gen_ai.usage.output_tokens": 5, "gen_ai.system_instructions": json.dumps([{"content": "Plan trips."}]),
                 "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Plan a trip to Lisbon"}]}]),
                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                     {"type": "tool_call", "id": "plan_trip_0", "name": "plan_trip", "arguments": {"city": "Lisbon"}}]}])}),
        _span("00000000000000c1", agent, "execute_tool plan_trip", 21, 45,
              **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "plan_trip", "gen_ai.agent.name": "trip_planner",
                 "gen_ai.tool.call.id": "adk-call-1", "gcp.vertex.agent.event_id": "ev-response",
                 "gen_ai.tool.call.arguments": '{"city": "Lisbon"}', "gen_ai.tool.call.result": '{"status": "ok"}'}),
        _span("00000000000000b2", agent, "generate_content scripted", 46, 50, **model,
              **{"gcp.vertex.agent.event_id": "ev-answer", "gen_ai.usage.input_tokens": 235, "gen_ai.usage.output_tokens": 7,
                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Done!"}]}])}),
        _span(agent, "00000000000000f1", "invoke_agent trip_planner", 5, 55,
              **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "trip_planner", **conv}),
        _span("00000000000000f1", "", "invoke_workflow trip_planner", 0, 60,
              **{"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "trip_planner", **conv}),
        _span("00000000000000e1", "", "POST /run", 0, 61, **{"http.route": "/run"}),  # not ADK's: not kept
    ]


def body(spans: list[Span], service: str = "") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    if service:
        resource_spans.resource.attributes.add(key="service.name", value=AnyValue(string_value=service))
    resource_spans.scope_spans.add().spans.extend(spans)
    return request


def post(client, data: bytes, content_type: str = "application/x-protobuf", **headers):
    return client.post("/v1/traces", data=data, content_type=content_type, headers=headers)


def test_adks_spans_rebuild_a_session_adkui_never_saw(client):
    answer = post(client, body(adk_spans(), service="trip-service").SerializeToString())
    assert answer.status_code == 200 and answer["Content-Type"] == "application/x-protobuf"
    session = Session.objects.get(session_id="otel-s1")
    assert (session.app.name, session.user_id, session.imported_from) == ("trip-service", "otlp", "otlp")
    events = list(session.events.order_by("seq"))
    assert [(e.author, e.event_id) for e in events] == [
        ("user", f"{INVOCATION}-user"), ("trip_planner", "ev-call"), ("trip_planner", "ev-response"),
        ("trip_planner", "ev-answer")]
    call = events[1].data["content"]["parts"][0]["function_call"]
    response = events[2].data["content"]["parts"][0]["function_response"]
    assert call["name"] == response["name"] == "plan_trip" and call["id"] == response["id"]  # they pair
    assert events[3].data["content"]["parts"] == [{"text": "Done!"}]
    assert {e.invocation_id for e in events} == {INVOCATION}
    tool = ToolCall.objects.get(session=session)
    assert (tool.tool_name, tool.duration_ms, tool.args, tool.result, tool.invocation_id) == (
        "plan_trip", 24.0, {"city": "Lisbon"}, {"status": "ok"}, INVOCATION)
    calls = list(ModelCall.objects.filter(session=session).order_by("started_at"))
    assert [(c.prompt_tokens, c.output_tokens, c.event_id) for c in calls] == [(214, 5, "ev-call"), (235, 7, "ev-answer")]
    assert calls[0].request["system_instruction"] == "Plan trips."
    assert AgentRun.objects.filter(session=session).count() == 2  # the workflow and its agent
    assert TraceSpan.objects.count() == 5 and not TraceSpan.objects.filter(placed=False).exists()


def test_json_with_hex_ids_and_gzip_is_read_alike(client):
    data = json_format.MessageToDict(body(adk_spans()))
    for resource in data["resourceSpans"]:  # OTLP/JSON: ids in hex, not protobuf-JSON's base64
        for span in resource["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in span:
                    span[key] = base64.b64decode(span[key]).hex()
    answer = post(client, gzip.compress(json.dumps(data).encode()), "application/json", content_encoding="gzip")
    assert answer.status_code == 200, answer.content
    assert json.loads(answer.content) == {}
    session = Session.objects.get(session_id="otel-s1")
    assert session.app.name == "trip_planner" and session.revision == 4


def test_spans_that_come_before_their_session_is_named_wait_for_it(client):
    spans = adk_spans()
    tool = spans[1]
    assert post(client, body([tool]).SerializeToString()).status_code == 200
    assert TraceSpan.objects.filter(placed=False).count() == 1 and not Session.objects.exists()
    post(client, body(spans).SerializeToString())  # the rest, and the tool span again (a retry): stored once
    assert TraceSpan.objects.count() == 5 and not TraceSpan.objects.filter(placed=False).exists()
    assert ToolCall.objects.get().invocation_id == INVOCATION


def test_spans_of_a_session_adkui_has_add_its_trace_not_events(client, service):
    service.create_session_sync(app_name="trip_planner", user_id="ann", session_id="otel-s1")
    post(client, body(adk_spans()).SerializeToString())
    session = Session.objects.get()
    assert session.user_id == "ann" and session.revision == 0
    assert ToolCall.objects.get().session == session


@pytest.mark.parametrize("data, content_type, headers, status, reason", [
    (b"\xff\xff\xff", "application/x-protobuf", {}, 400, "Not a valid OTLP"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00"}]}]}]}', "application/json",
     {}, 400, "traceId must be hex"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}', "application/json", {}, 400, "valid traceId"),
    (b"{not json", "application/json", {}, 400, "Not a valid OTLP"),
    (b'"AAA"', "application/json", {}, 400, "an OTLP JSON body is an object"),
    (b"spans", "text/plain", {}, 415, "Content-Type"),
    (b"spans", "application/x-protobuf", {"content_encoding": "br"}, 415, "Content-Encoding"),
    (b"not gzip", "application/x-protobuf", {"content_encoding": "gzip"}, 400, "does not decompress"),
])
def test_a_bad_body_is_refused_with_its_reason_and_stores_nothing(client, data, content_type, headers, status, reason):
    answer = post(client, data, content_type, **headers)
    assert answer.status_code == status and reason in answer.json()["detail"]
    assert not TraceSpan.objects.exists() and not Session.objects.exists()


def test_a_body_over_the_limit_is_refused_before_it_is_read_even_once_inflated(client, settings):
    settings.ADKUI_OTLP_MAX_BYTES = 10_000
    assert post(client, b"\0" * 10_001).status_code == 413
    bomb = gzip.compress(b"\0" * 1_000_000)  # a few kB that inflate past the limit
    answer = post(client, bomb, content_encoding="gzip")
    assert answer.status_code == 413 and "decompressed" in answer.json()["detail"]
    assert not TraceSpan.objects.exists()


def test_without_captured_content_the_replies_still_stand_as_events_with_their_tokens(client):
    content = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
               "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
    spans = adk_spans()
    for span in spans:
        kept = [a for a in span.attributes if a.key not in content]
        del span.attributes[:]
        span.attributes.extend(kept)
    post(client, body(spans).SerializeToString())
    events = list(Session.objects.get().events.order_by("seq"))
    assert [(e.event_id, e.invocation_id) for e in events] == [("ev-call", INVOCATION), ("ev-answer", INVOCATION)]
    assert "content" not in events[0].data and events[0].data["usage_metadata"]["prompt_token_count"] == 214
    assert ToolCall.objects.get().result is None


def test_a_failed_model_call_shows_as_the_error_event_it_was(client):
    spans = adk_spans()
    spans[2].status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="429 RESOURCE_EXHAUSTED"))
    spans[2].attributes.add(key="error.type", value=AnyValue(string_value="RESOURCE_EXHAUSTED"))
    post(client, body(spans).SerializeToString())
    event = Session.objects.get().events.get(event_id="ev-answer")
    assert (event.error_code, event.data["error_message"], event.has_error) == (
        "RESOURCE_EXHAUSTED", "429 RESOURCE_EXHAUSTED", True)
    assert ModelCall.objects.get(event_id="ev-answer").failed


def test_a_session_whose_records_name_no_invocation_still_opens(client, service):
    """A model call with no invocation (an exporter that sends none) is listed, not linked."""
    spans = [s for s in adk_spans() if s.name.startswith("generate_content")][:1]
    kept = [a for a in spans[0].attributes if a.key != "gcp.vertex.agent.invocation_id"]
    del spans[0].attributes[:]
    spans[0].attributes.extend(kept)
    post(client, body(spans).SerializeToString())
    session = Session.objects.get()
    assert ModelCall.objects.get().invocation_id == ""
    assert client.get(f"/sessions/{session.pk}/").status_code == 200
    assert client.get(f"/inspect/model-calls/{ModelCall.objects.get().pk}/").status_code == 200


def v1_spans() -> list[Span]:
    """The same turn in ADK's legacy schema v1: call_llm spans with ADK's own JSON
    (ending after the tool they asked for), genai's generate_content copies, an invocation span."""
    agent, root = "00000000000000a1", "00000000000000f1"
    request = {"model": "scripted", "config": {"system_instruction": "Plan trips."},
               "contents": [{"role": "user", "parts": [{"text": "Plan a trip to Lisbon"}]}]}
    call = {"content": {"role": "model", "parts": [{"function_call": {"name": "plan_trip", "args": {"city": "Lisbon"}}}]},
            "usage_metadata": {"prompt_token_count": 212, "candidates_token_count": 5}}
    answer = {"content": {"role": "model", "parts": [{"text": "Done!"}]}}
    v1 = {"gcp.vertex.agent.invocation_id": INVOCATION, "gcp.vertex.agent.session_id": "otel-v1"}
    copy = {"gen_ai.system": "gemini", "gen_ai.operation.name": "generate_content", "gen_ai.conversation.id": "otel-v1",
            "gcp.vertex.agent.invocation_id": INVOCATION}
    return [
        _span("00000000000000d1", "00000000000000b1", "generate_content scripted", 11, 19,
              **copy, **{"gcp.vertex.agent.event_id": "ev-call"}),
        _span("00000000000000c1", agent, "execute_tool plan_trip", 21, 45,
              **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "plan_trip", "gen_ai.agent.name": "trip_planner",
                 "gen_ai.tool.call.id": "adk-call-1", "gcp.vertex.agent.event_id": "ev-response",
                 "gcp.vertex.agent.tool_call_args": '{"city": "Lisbon"}', "gcp.vertex.agent.tool_response": '{"status": "ok"}'}),
        _span("00000000000000b1", agent, "call_llm", 10, 46, **v1, **{"gcp.vertex.agent.event_id": "ev-call",
              "gcp.vertex.agent.llm_request": json.dumps(request), "gcp.vertex.agent.llm_response": json.dumps(call)}),
        _span("00000000000000b2", agent, "call_llm", 47, 50, **v1, **{"gcp.vertex.agent.event_id": "ev-answer",
              "gcp.vertex.agent.llm_request": json.dumps(request), "gcp.vertex.agent.llm_response": json.dumps(answer)}),
        _span(agent, root, "invoke_agent trip_planner", 5, 55,
              **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "trip_planner", "gen_ai.conversation.id": "otel-v1"}),
        _span(root, "", "invocation", 0, 60),
    ]


def test_adks_legacy_schema_v1_rebuilds_the_same_session_whatever_the_batches(client):
    spans = v1_spans()
    for batch in (spans[:2], spans[2:3], spans[3:]):  # as the exporter sends them: each span once it ended
        assert post(client, body(batch).SerializeToString()).status_code == 200
    session = Session.objects.get(session_id="otel-v1")
    assert session.app.name == "trip_planner"  # no service.name, no workflow: the agent's name
    events = list(session.events.order_by("seq"))
    assert [(e.author, e.event_id) for e in events] == [
        ("user", f"{INVOCATION}-user"), ("trip_planner", "ev-call"), ("trip_planner", "ev-response"),
        ("trip_planner", "ev-answer")]
    call = events[1].data["content"]["parts"][0]["function_call"]
    response = events[2].data["content"]["parts"][0]["function_response"]
    assert call["id"] == response["id"] == "adk-call-1"
    assert ModelCall.objects.count() == 2  # genai's copy of a call is not a second call
    assert ModelCall.objects.get(event_id="ev-call").request["system_instruction"] == "Plan trips."
    assert ToolCall.objects.get().result == {"status": "ok"}
