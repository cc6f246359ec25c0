"""The API tells the truth (#29): what it answers is what its schema says, for every method."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from google.adk.events import Event as AdkEvent
from google.genai import types
from jsonschema import Draft202012Validator

from adkui.errors import csrf_failure
from memory_app.artifact_service import DjangoArtifactService
from sessions_app.models import Event, Session


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_an_unknown_api_route_is_a_json_404_for_every_method(method: str) -> None:
    """Writes used to meet Django's HTML CSRF page (403) before any route was looked up."""
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method, "/api/no/such/route", b"{}", content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "/api/no/such/route" in response.json()["detail"]


@pytest.mark.django_db
def test_a_csrf_refusal_under_api_is_json(rf) -> None:
    api = csrf_failure(rf.post("/api/anything"), reason="CSRF token missing.")
    page = csrf_failure(rf.post("/sessions/1/fork/"), reason="CSRF token missing.")
    assert api.status_code == page.status_code == 403
    assert api["Content-Type"] == "application/json" and "CSRF token missing." in json.loads(api.content)["detail"]
    assert page["Content-Type"].startswith("text/html")


# ---- responses read back valid against the API's own schema -------------------------

APP, USER = "trip_planner", "ann"
SESSION = f"/api/apps/{APP}/users/{USER}/sessions/s1"


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True)))


def assert_conforms(openapi: dict[str, Any], template: str, method: str, response: Any) -> None:
    """The response's JSON is what the schema documents for its status (OpenAPI 3.1 is JSON Schema 2020-12)."""
    documented = openapi["paths"][template][method]["responses"][str(response.status_code)]
    schema = {**documented["content"]["application/json"]["schema"], "components": openapi["components"]}
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(schema).iter_errors(response.json())]
    assert not errors, errors[:5]


@pytest.mark.django_db
def test_metrics_info_answers_what_its_schema_says(client, openapi) -> None:
    """Its `Interval` was google-genai's (startTime/endTime) though the answer holds ADK eval's."""
    response = client.get(f"/api/dev/apps/{APP}/metrics-info")
    assert response.status_code == 200
    assert_conforms(openapi, "/api/dev/apps/{app_name}/metrics-info", "get", response)
    names = [name for name in openapi["components"]["schemas"] if name.endswith("Interval")]
    assert sorted(names) == ["EvalMetricsInterval", "Interval"]


ODD = {"finishReason": "AAA", "interactionStatus": "aaa", "turnCompleteReason": "stop-ish"}


@pytest.mark.django_db
def test_an_unknown_enum_value_is_kept_as_adk_keeps_it_and_reads_back_valid(client, service, openapi) -> None:
    """google-genai's enums keep a value they do not know (ADK's models and server accept it), so the
    schema says open string; what is stored then always reads back valid, by the schema and by ADK."""
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    part = {"text": "hi", "functionResponse": {"name": "f", "parts": [{"mediaProcessing": "BBB"}]}}
    body = {"author": "x", "content": {"role": "model", "parts": [part]}, **ODD}
    assert validate_adk_accepts(body)
    created = client.post(SESSION + "/events", body, content_type="application/json")
    assert created.status_code == 201, created.content
    read = client.get(SESSION)
    assert_conforms(openapi, "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}", "get", read)
    event = AdkEvent.model_validate(read.json()["events"][0])
    assert {event.finish_reason, event.interaction_status, event.turn_complete_reason} == {"AAA", "aaa", "stop-ish"}
    assert event.content.parts[0].function_response.parts[0].media_processing == "BBB"
    known = openapi["components"]["schemas"]["FinishReason"]
    assert "enum" not in known and "STOP" in known["examples"] and "open enum" in known["description"]


def validate_adk_accepts(body: dict[str, Any]) -> bool:
    """ADK's own model takes it (with google-genai's warning), which is what the API follows."""
    with pytest.warns(UserWarning, match="is not a valid"):
        AdkEvent.model_validate(body)
    return True


# ---- what the schema says a request needs is what the server needs --------------------


def request_schema(openapi: dict[str, Any], template: str, method: str) -> dict[str, Any]:
    schema = openapi["paths"][template][method]["requestBody"]["content"]["application/json"]["schema"]
    if "$ref" in schema:
        return openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


@pytest.mark.django_db
def test_patch_needs_a_state_delta_as_the_schema_and_adk_say(client, service, openapi) -> None:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    template = "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}"
    assert request_schema(openapi, template, "patch")["required"] == ["stateDelta"]
    refused = client.patch(SESSION, {}, content_type="application/json")
    assert refused.status_code == 400 and "stateDelta" in refused.json()


@pytest.mark.django_db
def test_session_options_are_documented_as_the_empty_object_the_service_takes(client, openapi) -> None:
    sessions = f"/api/apps/{APP}/users/{USER}/sessions"
    options = request_schema(openapi, "/api/apps/{app_name}/users/{user_id}/sessions", "post")["properties"]["options"]
    assert options["maxProperties"] == 0
    refused = client.post(sessions, {"sessionId": "o1", "options": {"ttl": 5}}, content_type="application/json")
    assert refused.status_code == 400 and "options" in refused.json()
    taken = client.post(sessions, {"sessionId": "o2", "options": {}}, content_type="application/json")
    assert taken.status_code == 200 and taken.json()["id"] == "o2"


@pytest.mark.django_db
def test_the_telemetry_header_adk_requires_is_documented(client, openapi) -> None:
    operation = openapi["paths"]["/api/config/telemetry"]["post"]
    header = next(p for p in operation["parameters"] if p["in"] == "header")
    assert header["name"] == "x-adk-telemetry-request" and header["required"] and header["schema"]["enum"] == ["true"]
    without = client.post("/api/config/telemetry", {"telemetry": True}, content_type="application/json")
    sent = client.post("/api/config/telemetry", {"telemetry": True}, content_type="application/json",
                       headers={"x-adk-telemetry-request": "true"})
    assert (without.status_code, sent.status_code) == (400, 200)


# ---- no conversion of wrong types ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "body", "field"), [
    (f"/api/apps/{APP}/users/{USER}/sessions", {"sessionId": 12345}, "sessionId"),
    (SESSION + "/events", {"author": "x", "timestamp": True}, "timestamp"),
    (SESSION + "/events", {"author": "x", "timestamp": "1700000000"}, "timestamp"),
    (SESSION + "/events", {"author": "x", "partial": "false"}, "partial"),
    (SESSION + "/events", {"author": "x", "usageMetadata": {"promptTokenCount": 2.5}}, "usageMetadata.promptTokenCount"),
    ("/api/run", {"appName": APP, "userId": USER, "sessionId": 1, "newMessage": {"parts": [{"text": "hi"}]}}, "sessionId"),
    ("/api/run", {"appName": APP, "userId": USER, "sessionId": "s1", "streaming": "yes",
                  "newMessage": {"parts": [{"text": "hi"}]}}, "streaming"),
])
def test_a_value_of_the_wrong_type_is_refused_not_converted(client, service, path, body, field) -> None:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    response = client.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert (Session.objects.count(), Event.objects.count()) == (1, 0)


@pytest.mark.django_db
def test_values_of_their_own_type_still_pass(client, service) -> None:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    body = {"author": "x", "timestamp": 1700000000, "partial": False, "longRunningToolIds": ["t"],
            "usageMetadata": {"promptTokenCount": 2.0}, "content": {"role": "model", "parts": [{"text": "hi"}]}}
    assert client.post(SESSION + "/events", body, content_type="application/json").status_code == 201


# ---- artifact versions: a number or `latest`, as documented ---------------------------------


@pytest.mark.django_db
def test_an_artifact_version_is_a_number_or_latest_as_documented(client, service, openapi) -> None:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    DjangoArtifactService().save_artifact_sync(app_name=APP, user_id=USER, session_id="s1", filename="a.txt",
                                               artifact=types.Part(text="hello"))
    template = "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts/{artifact_name}/versions/{version_id}"
    documented = next(p for p in openapi["paths"][template]["get"]["parameters"] if p["name"] == "version_id")
    assert [s.get("type") for s in documented["schema"]["anyOf"]] == ["integer", "string"]
    base = SESSION + "/artifacts/a.txt"
    for good in ("0", "latest"):
        assert client.get(f"{base}/versions/{good}").json() == {"text": "hello"}
    assert client.get(f"{base}?version=0").json() == {"text": "hello"}
    for bad in ("abc", "-1", "+0", "%200", "1.0", "\u0660", str(2**31)):
        assert client.get(f"{base}/versions/{bad}").status_code == 422, bad
        assert client.get(f"{base}/versions/{bad}/metadata").status_code == 422, bad
        assert client.get(f"{base}?version={bad}").status_code == 422, bad


# ---- every operation documents its errors, in one shape ------------------------------------


def test_every_operation_documents_its_errors_in_one_shape(openapi) -> None:
    operations = [(path, method, op) for path, item in openapi["paths"].items() for method, op in item.items()]
    assert len(operations) > 60
    for path, method, operation in operations:
        errors = {status: body for status, body in operation["responses"].items() if status >= "400"}
        assert "400" in errors, (method, path)
        if "{" in path:
            assert "404" in errors, (method, path)
        if method in ("post", "put", "patch"):
            assert "415" in errors, (method, path)
        for status, body in errors.items():
            assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiError"}, (
                method, path, status)


@pytest.mark.django_db
def test_errors_answered_are_the_documented_shape(client, service, openapi) -> None:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    sessions = "/api/apps/{app_name}/users/{user_id}/sessions"
    taken = client.post(f"/api/apps/{APP}/users/{USER}/sessions", {"sessionId": "s1"}, content_type="application/json")
    invalid = client.post(f"/api/apps/{APP}/users/{USER}/sessions", {"state": []}, content_type="application/json")
    not_json = client.post(f"/api/apps/{APP}/users/{USER}/sessions", "x=1", content_type="text/plain")
    assert (taken.status_code, invalid.status_code, not_json.status_code) == (409, 400, 415)
    for response in (taken, invalid, not_json):
        assert_conforms(openapi, sessions, "post", response)
    missing = client.get(SESSION + "/artifacts/a.txt/versions/7")
    assert missing.status_code == 404
    assert_conforms(openapi, "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts/{artifact_name}"
                             "/versions/{version_id}", "get", missing)
