"""The trace routes built from stored records: what a run cut short, a second invocation,
a tool call and another app's session of the same id come out as."""
from __future__ import annotations

import json

import pytest
from django.test import Client

from inspector_app import services
from sessions_app.keys import SessionKey

pytestmark = pytest.mark.django_db
KEY = SessionKey("trip_planner", "u", "s1")


def span(span_id: str, parent: str, started_at: float, duration_ms: float | None, *, invocation: str = "inv-1",
         key: SessionKey = KEY, agent: str = "trip_planner") -> services.Span:
    return services.Span(key=key, session_pk=None, invocation_id=invocation, span_id=span_id, parent_span_id=parent,
                         agent_name=agent, branch=None, started_at=started_at, duration_ms=duration_ms)


def trace(client: Client, session_id: str = "s1") -> list[dict]:
    response = client.get(f"/api/dev/apps/trip_planner/debug/trace/session/{session_id}")
    assert response.status_code == 200
    return response.json()


def test_a_call_the_run_never_finished_lasts_to_the_invocations_end(client: Client) -> None:
    services.agent_run_record(span=span("a1", "", 1000.0, 500.0))
    services.model_call_record(span=span("m1", "gone", 1000.1, None), event_id="", request={"model": "m"},
                               response={})
    spans = {s["span_id"]: s for s in trace(client)}
    assert set(spans) == {"inv-1", "a1", "m1"}
    root, model = spans["inv-1"], spans["m1"]
    assert root["parent_span_id"] is None and root["name"] == "invocation"
    assert model["parent_span_id"] == "inv-1"  # its parent was never recorded
    assert model["end_time"] == root["end_time"] == 1000.5 * 10**9
    assert spans["a1"]["parent_span_id"] == "inv-1" and spans["a1"]["name"] == "invoke_agent trip_planner"
    assert "gen_ai.usage.input_tokens" not in model["attributes"]  # never null: adk-web would reject the trace


def test_each_invocation_is_a_trace_of_its_own_and_other_apps_are_left_out(client: Client) -> None:
    services.agent_run_record(span=span("a1", "", 1000.0, 10.0))
    services.agent_run_record(span=span("a2", "", 2000.0, 10.0, invocation="inv-2"))
    services.agent_run_record(span=span("x", "", 1500.0, 10.0, key=SessionKey("memory_demo", "u", "s1")))
    spans = trace(client)
    assert [(s["trace_id"], s["span_id"]) for s in spans] == [
        ("inv-1", "inv-1"), ("inv-1", "a1"), ("inv-2", "inv-2"), ("inv-2", "a2")]
    assert trace(client, "no-such-session") == []


def test_a_tool_call_carries_its_arguments_and_result_and_answers_for_its_event(client: Client) -> None:
    services.agent_run_record(span=span("a1", "", 1000.0, 10.0))
    services.tool_call_record(span=span("t1", "a1", 1000.002, 1.5), tool_name="plan_trip", function_call_id="fc-1",
                              args={"city": "Kyoto"}, result={"status": "error"}, event_id="ev-7")
    [tool] = [s for s in trace(client) if s["span_id"] == "t1"]
    assert tool["name"] == "execute_tool plan_trip" and tool["parent_span_id"] == "a1"
    attributes = tool["attributes"]
    assert json.loads(attributes["gcp.vertex.agent.tool_call_args"]) == {"city": "Kyoto"}
    assert json.loads(attributes["gcp.vertex.agent.tool_response"]) == {"status": "error"}
    by_event = client.get("/api/dev/apps/trip_planner/debug/trace/ev-7").json()
    assert by_event["gen_ai.tool.call.id"] == "fc-1" and (by_event["trace_id"], by_event["span_id"]) == ("inv-1", "t1")
    assert client.get("/api/dev/apps/memory_demo/debug/trace/ev-7").status_code == 404


def test_a_failed_call_names_its_error_type(client: Client) -> None:
    services.model_call_record(span=services.Span(**{**span("m1", "", 1000.0, 3.0).__dict__,
                                                     "error": "RuntimeError: the model is down"}),
                               event_id="ev-1", request={}, response={})
    [model] = [s for s in trace(client) if s["span_id"] == "m1"]
    assert model["attributes"]["error.type"] == "RuntimeError"


def test_genai_attributes_come_from_what_was_recorded_and_are_left_out_where_nothing_was(client: Client) -> None:
    """ADK 2.13's agent, model and tool span attributes (#29); rows recorded before they were kept omit them."""
    services.agent_run_record(span=span("a1", "", 1000.0, 10.0), description="")
    services.agent_run_record(span=span("a0", "", 999.0, 1.0, agent="older"))
    tools = [{"name": "plan_trip", "kind": "function", "description": "Plan it.", "parameters": {"type": "object"}},
             {"name": "google_search", "kind": "builtin", "spec": {}}]
    services.model_call_record(span=span("m1", "a1", 1000.001, 1.0), event_id="ev-1",
                               request={"model": "m", "tools": tools}, response={})
    services.model_call_record(span=span("m2", "a1", 1000.003, 1.0), event_id="ev-2", request={"model": "m"},
                               response={})
    services.tool_call_record(span=span("t1", "a1", 1000.002, 1.0), tool_name="plan_trip", function_call_id="fc-1",
                              args={}, result={}, event_id="ev-3", tool_type="FunctionTool", tool_description="Plan it.")
    services.tool_call_record(span=span("t0", "a0", 999.5, 1.0), tool_name="old", function_call_id="fc-0",
                              args={}, result={}, event_id="ev-0")
    spans = {s["span_id"]: s["attributes"] for s in trace(client)}
    assert spans["a1"]["gen_ai.agent.description"] == "" and "gen_ai.agent.description" not in spans["a0"]
    assert json.loads(spans["m1"]["gen_ai.tool.definitions"]) == [
        {"name": "plan_trip", "description": "Plan it.", "parameters": None, "type": "function"},
        {"name": "google_search", "type": "google_search"}]
    assert " " not in spans["m1"]["gen_ai.tool.definitions"].replace("Plan it.", "")  # ADK's compact JSON
    assert "gen_ai.tool.definitions" not in spans["m2"]  # no tools: ADK sets none
    assert (spans["t1"]["gen_ai.tool.type"], spans["t1"]["gen_ai.tool.description"]) == ("FunctionTool", "Plan it.")
    assert "gen_ai.tool.type" not in spans["t0"] and "gen_ai.tool.description" not in spans["t0"]
    by_event = client.get("/api/dev/apps/trip_planner/debug/trace/ev-3").json()
    assert by_event["gen_ai.tool.type"] == "FunctionTool"
