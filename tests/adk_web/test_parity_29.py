"""adk-web's steps that answered otherwise than ADK 2.13's own server (#29)."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from google.adk.cli.agent_graph import get_agent_graph
from google.adk.events import Event as AdkEvent
from google.genai import types

from runtime_app import agents

APP, USER = "trip_planner", "ann"
pytestmark = pytest.mark.django_db


def test_a_refused_session_import_answers_with_adks_detail(client):
    call = types.Part(function_call=types.FunctionCall(name="adk_request_confirmation", args={}))
    event = AdkEvent(author="x", content=types.Content(role="model", parts=[call]))
    body = {"sessionId": "imp", "events": [event.model_dump(mode="json", by_alias=True, exclude_none=True)]}
    response = client.post(f"/api/apps/{APP}/users/{USER}/sessions", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": "Session initialization event 0 cannot include ADK protocol function calls."}


def test_the_telemetry_consent_is_a_boolean_in_answer_and_schema(client):
    assert client.get("/api/config/telemetry").json() == {"telemetry": False}
    schema = client.get("/api/schema/?format=json").json()
    assert schema["components"]["schemas"]["TelemetryConsent"]["properties"]["telemetry"] == {"type": "boolean"}


def test_an_events_graph_highlights_its_hop_as_adks_route_does(client, service):
    session = service.create_session_sync(app_name=APP, user_id=USER, session_id="g1")
    call = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Lisbon"}))
    event = AdkEvent(author=APP, invocation_id="i", content=types.Content(role="model", parts=[call]))
    service.append_event_sync(session, event)
    base = f"/api/dev/apps/{APP}/users/{USER}/sessions/g1/events"
    answer = client.get(f"{base}/{event.id}/graph")
    assert answer.status_code == 200
    expected = async_to_sync(get_agent_graph)(agents.load(APP).root, [(APP, "get_weather")])
    assert answer.json() == {"dotSrc": expected.source}
    assert client.get(f"{base}/nope/graph").json() == {}
    assert client.get(f"/api/dev/apps/{APP}/users/{USER}/sessions/none/events/x/graph").json() == {}
