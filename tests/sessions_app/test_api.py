"""The REST API: ADK's api-server routes and ours, through Django's test clients."""
from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types

from runtime_app import agents
from adkui.adk import DjangoSessionService
from runtime_app import runs
from sessions_app.models import Event, Session, StateChange
from sessions_app.keys import SessionKey

APP = "trip_planner"
SESSIONS = f"/api/apps/{APP}/users/ann/sessions"


@pytest.fixture
def svc() -> DjangoSessionService:
    return DjangoSessionService()


@pytest.fixture
def session(svc):
    return svc.create_session_sync(app_name=APP, user_id="ann", state={"user:name": "Ann", "budget": 1200})


def url(session, suffix: str = "") -> str:
    return f"/api/apps/{session.app_name}/users/{session.user_id}/sessions/{session.id}{suffix}"


def post(client: Client, path: str, body, **extra):
    return client.post(path, json.dumps(body), content_type="application/json", **extra)


def message(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def run_body(session, text: str | None = None, **extra) -> dict:
    body = {"appName": session.app_name, "userId": session.user_id, "sessionId": session.id, **extra}
    if text is not None:
        body["newMessage"] = message(text)
    return body


def sse_frames(body: bytes) -> list[dict]:
    """Parse a text/event-stream body: every frame one `data:` line and a blank line."""
    text = body.decode()
    assert text.endswith("\n\n")
    frames = text[:-2].split("\n\n")
    assert all(f.startswith("data: ") and "\n" not in f for f in frames), frames
    return [json.loads(f.removeprefix("data: ")) for f in frames]


@pytest.fixture
def failing_agent(settings, tmp_path: Path):
    """An agents dir holding one agent whose model raises."""
    package = tmp_path / "api_failing_agent"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(textwrap.dedent('''
        from google.adk.agents import LlmAgent
        from runtime_app.scripted_model import ScriptedModel

        def _fail(llm_request):
            raise RuntimeError("the model is down")

        root_agent = LlmAgent(name="failing", model=ScriptedModel(replies=[_fail]))
    '''))
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    agents._loader.cache_clear()
    yield "api_failing_agent"
    agents._loader.cache_clear()


# ---- apps --------------------------------------------------------------------


@pytest.mark.django_db
def test_list_apps_lists_the_demo_agents(client):
    assert "trip_planner" in client.get("/api/list-apps").json()
    detailed = client.get("/api/list-apps?detailed=true").json()["apps"]
    trip = next(a for a in detailed if a["name"] == "trip_planner")
    assert trip["rootAgentName"] == "trip_planner" and trip["language"] == "python"
    assert trip["description"] == "Plans trips and remembers them."


# ---- sessions ----------------------------------------------------------------


@pytest.mark.django_db
def test_it_creates_lists_gets_and_deletes_sessions_in_adks_shape(client):
    created = post(client, SESSIONS, {"sessionId": "s1", "state": {"mood": "ok", "app:theme": "dark"}})
    assert created.status_code == 200
    body = created.json()
    assert body == {
        "id": "s1", "appName": APP, "userId": "ann", "state": {"mood": "ok", "app:theme": "dark"},
        "events": [], "lastUpdateTime": body["lastUpdateTime"],
    }
    assert post(client, SESSIONS, {}).status_code == 200  # no body fields: a generated id
    listed = client.get(SESSIONS).json()
    assert {s["id"] for s in listed} >= {"s1"} and all(s["events"] == [] for s in listed)
    assert client.get(f"{SESSIONS}/s1").json()["state"] == {"mood": "ok", "app:theme": "dark"}

    deleted = client.delete(f"{SESSIONS}/s1")
    assert deleted.status_code == 200 and deleted.json() is None and deleted.content == b"null"  # as ADK's server
    missing = client.get(f"{SESSIONS}/s1")
    assert missing.status_code == 404 and "s1" in missing.json()["detail"]


@pytest.mark.django_db
def test_create_accepts_snake_case_and_the_deprecated_id_route(client):
    assert post(client, SESSIONS, {"session_id": "snake"}).json()["id"] == "snake"
    made = post(client, f"{SESSIONS}/chosen", {"topic": "x"})
    assert made.status_code == 200 and made.json()["id"] == "chosen" and made.json()["state"] == {"topic": "x"}


@pytest.mark.django_db
def test_create_restores_events_and_refuses_adk_internal_ones(client):
    event = {"author": "user", "content": message("earlier")}
    made = post(client, SESSIONS, {"sessionId": "restored", "events": [event]})
    assert made.status_code == 200
    assert [e["content"]["parts"][0]["text"] for e in made.json()["events"]] == ["earlier"]
    assert Event.objects.filter(session__session_id="restored").count() == 1

    with_actions = {**event, "actions": {"stateDelta": {"x": 1}}}
    refused = post(client, SESSIONS, {"sessionId": "forged", "events": [with_actions]})
    assert refused.status_code == 400 and "event actions" in refused.json()["detail"]  # ADK's shape (#29)
    assert not Session.objects.filter(session_id="forged").exists()


@pytest.mark.django_db
def test_session_create_conflicts_and_bad_input(client, session):
    assert post(client, SESSIONS, {"sessionId": session.id}).status_code == 409
    not_a_dict = post(client, SESSIONS, {"state": "not a dict"})
    assert not_a_dict.json() == {"state": ['Expected a dictionary of items but got type "str".']}
    bad_json = client.post(SESSIONS, "{nope", content_type="application/json")
    assert bad_json.status_code == 400 and "JSON parse error" in bad_json.json()["detail"]


@pytest.mark.django_db
def test_unknown_app_or_session_and_another_users_session_are_404_json(client, session):
    for path in (
        "/api/apps/nope/users/ann/sessions",
        "/api/apps/nope/users/ann/sessions/x",
        f"{SESSIONS}/nope",
        f"/api/apps/{APP}/users/bob/sessions/{session.id}",
        f"/api/apps/{APP}/users/bob/sessions/{session.id}/events",
        f"/api/apps/{APP}/users/bob/sessions/{session.id}/state",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/json" and response.json()["detail"], path
    assert post(client, "/api/apps/nope/users/ann/sessions", {}).status_code == 404
    assert client.delete(f"/api/apps/{APP}/users/bob/sessions/{session.id}").status_code == 404


@pytest.mark.django_db
def test_an_app_known_only_from_stored_sessions_is_found(client, svc):
    svc.create_session_sync(app_name="elsewhere", user_id="ann", session_id="s")
    assert client.get("/api/apps/elsewhere/users/ann/sessions/s").status_code == 200
    body = {"appName": "elsewhere", "userId": "ann", "sessionId": "s", "newMessage": message("hi")}
    not_runnable = post(client, "/api/run", body)
    assert not_runnable.status_code == 404 and "elsewhere" in not_runnable.json()["detail"]


@pytest.mark.django_db
def test_patch_appends_the_state_delta_as_adks_user_event(client, session):
    response = client.patch(
        url(session), json.dumps({"stateDelta": {"budget": 900, "user:name": "Ann B", "temp:x": 1}}),
        content_type="application/json",
    )
    assert response.status_code == 200
    body = response.json()
    # As from ADK's server: the session object holds temp: state until it is dropped...
    assert body["state"] == {"budget": 900, "user:name": "Ann B", "temp:x": 1}
    # ...which storage never sees.
    assert client.get(url(session)).json()["state"] == {"budget": 900, "user:name": "Ann B"}
    [event] = body["events"]
    assert event["author"] == "user" and event["invocationId"].startswith("p-")
    assert event["actions"]["stateDelta"] == {"budget": 900, "user:name": "Ann B"}
    assert Event.objects.get(session__session_id=session.id).seq == 1

    missing = client.patch(url(session), json.dumps({}), content_type="application/json")
    assert missing.status_code == 400 and "stateDelta" in missing.json()


@pytest.mark.django_db
def test_a_path_answers_405_for_a_method_it_lacks(client, session):
    response = client.put(url(session), "{}", content_type="application/json")
    assert response.status_code == 405
    assert set(response["Allow"].split(", ")) == {"GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"}


@pytest.mark.django_db
def test_posts_from_scripts_need_no_csrf_token(session):
    strict = Client(enforce_csrf_checks=True)
    assert post(strict, SESSIONS, {}).status_code == 200
    assert post(strict, url(session, "/events"), {"author": "script"}).status_code == 201


# ---- events and state --------------------------------------------------------


def append(svc, session, author: str, delta: dict) -> None:
    fresh = svc.get_session_sync(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
    svc.append_event_sync(fresh, AdkEvent(author=author, actions=EventActions(state_delta=delta)))


@pytest.mark.django_db
def test_events_come_in_pages_by_sequence_number(client, svc, session):
    for n in range(5):
        append(svc, session, f"a{n}", {"n": n})
    first = client.get(url(session, "/events?limit=2")).json()
    assert [e["seq"] for e in first["events"]] == [1, 2]
    assert [e["author"] for e in first["events"]] == ["a0", "a1"]
    assert first["nextAfterSeq"] == 2 and first["lastSeq"] == 5
    assert first["events"][0]["actions"]["stateDelta"] == {"n": 0}  # camelCase, as ADK
    last = client.get(url(session, "/events?after_seq=4&limit=2")).json()
    assert [e["seq"] for e in last["events"]] == [5] and last["nextAfterSeq"] is None
    assert client.get(url(session, "/events?after_seq=5")).json()["events"] == []
    assert AdkEvent.model_validate(first["events"][0]).author == "a0"  # still an ADK event

    bad = client.get(url(session, "/events?limit=0"))
    assert bad.status_code == 400 and "limit" in bad.json()


@pytest.mark.django_db
def test_an_event_json_from_any_process_is_validated_and_stored(client, svc, session):
    event = {
        "id": "ext-1", "invocationId": "inv-ext", "author": "go_agent",
        "content": {"role": "model", "parts": [{"text": "hi"}]},
        "actions": {"stateDelta": {"mood": "good", "user:lang": "pt", "app:calls": 1, "temp:scratch": "x"}},
    }
    response = post(client, url(session, "/events"), event)
    assert response.status_code == 201
    assert response.json()["seq"] == 1 and response.json()["id"] == "ext-1"
    stored = svc.get_session_sync(app_name=APP, user_id="ann", session_id=session.id)
    assert stored.events[0].author == "go_agent" and stored.events[0].invocation_id == "inv-ext"
    assert stored.state == {"budget": 1200, "mood": "good", "user:name": "Ann", "user:lang": "pt", "app:calls": 1}
    assert not StateChange.objects.filter(key="scratch").exists()

    again = post(client, url(session, "/events"), event)
    assert again.status_code == 409 and "ext-1" in again.json()["detail"]


@pytest.mark.django_db
def test_an_event_adks_model_rejects_is_400_naming_the_field_and_not_stored(client, session):
    bad = {"author": "x", "content": {"parts": [{"text": 42}]}}
    response = post(client, url(session, "/events"), bad)
    assert response.status_code == 400
    assert response.json() == {"content.parts.0.text": ["Input should be a valid string"]}
    assert post(client, url(session, "/events"), {"author": "x", "timestamp": "noon"}).json() == {
        "timestamp": ["Input should be a valid number, unable to parse string as a number"]
    }
    assert post(client, url(session, "/events"), [1]).status_code == 400
    assert client.post(url(session, "/events"), "{", content_type="application/json").status_code == 400
    assert not Event.objects.exists()


@pytest.mark.django_db
def test_a_partial_event_is_accepted_but_not_stored(client, session):
    response = post(client, url(session, "/events"), {"author": "x", "partial": True, "content": message("chunk")})
    assert response.status_code == 200 and response.json()["seq"] is None
    assert not Event.objects.exists()


@pytest.mark.django_db
def test_state_as_of_an_event(client, svc, session):
    append(svc, session, "a", {"budget": 1000, "user:name": "Ann B"})
    append(svc, session, "a", {"budget": 800, "city": "Lisbon"})
    at_creation = client.get(url(session, "/state?seq=0")).json()
    assert at_creation == {
        "seq": 0, "state": {"budget": 1200, "user:name": "Ann"},
        "app": {}, "user": {"name": "Ann"}, "session": {"budget": 1200},
    }
    assert client.get(url(session, "/state?seq=1")).json()["state"] == {"budget": 1000, "user:name": "Ann B"}
    now = client.get(url(session, "/state")).json()
    assert now["seq"] == 2 and now["state"] == {"budget": 800, "city": "Lisbon", "user:name": "Ann B"}
    assert client.get(url(session, "/state?seq=3")).status_code == 404
    assert client.get(url(session, "/state?seq=-1")).status_code == 400


# ---- runs --------------------------------------------------------------------


@pytest.mark.django_db
def test_run_returns_the_agents_events_in_adks_shape(client, svc, session):
    response = post(client, "/api/run", run_body(session, "Please plan a trip to Lisbon"))
    assert response.status_code == 200
    events = response.json()
    assert [e["author"] for e in events] == ["trip_planner"] * 3  # call, tool response, answer
    assert events[0]["content"]["parts"][0]["functionCall"]["name"] == "plan_trip"
    assert events[-1]["content"]["parts"][0]["text"] == "Done! Your trip is planned."
    assert all(e["invocationId"] == events[0]["invocationId"] and not e.get("partial") for e in events)
    stored = svc.get_session_sync(app_name=APP, user_id="ann", session_id=session.id)
    assert [e.id for e in stored.events[1:]] == [e["id"] for e in events]  # after the user's own event
    assert stored.state["destination"] == "Lisbon" and stored.state["user:trips_planned"] == 1


@pytest.mark.django_db
def test_run_refuses_bad_input_before_running(client, session):
    assert post(client, "/api/run", run_body(session)).json() == {
        "newMessage": ["Give a newMessage, or an invocationId to resume."]
    }
    bad_message = post(client, "/api/run", {**run_body(session), "newMessage": {"parts": [{"text": 1}]}})
    assert bad_message.status_code == 400 and bad_message.json() == {
        "newMessage": {"parts.0.text": ["Input should be a valid string"]}
    }
    assert "userId" in post(client, "/api/run", {"appName": APP, "sessionId": session.id}).json()
    other_user = post(client, "/api/run", {**run_body(session, "hi"), "userId": "bob"})
    assert other_user.status_code == 404 and session.id in other_user.json()["detail"]
    no_invocation = post(client, "/api/run", run_body(session, invocationId="e-nope"))
    assert no_invocation.status_code == 404 and "e-nope" in no_invocation.json()["detail"]
    assert not Event.objects.exists()


@pytest.mark.django_db
def test_run_resumes_an_interrupted_invocation_by_its_id(client, svc, session):
    async def interrupted() -> str:
        request = runs.RunRequest(
            key=SessionKey(APP, "ann", session.id),
            new_message=types.Content(role="user", parts=[types.Part(text="Plan a trip to Oslo")]),
        )
        async for event in runs.run_agent(request):
            runs.stop_run(request.key)  # after the function call, before the tool runs
        return event.invocation_id

    invocation_id = async_to_sync(interrupted)()
    assert Event.objects.filter(error_code="INVOCATION_ABORTED").exists()
    response = post(client, "/api/run", run_body(session, invocationId=invocation_id))
    assert response.status_code == 200
    [answer] = response.json()
    assert answer["invocationId"] == invocation_id
    assert answer["content"]["parts"][0]["text"] == "Done! Your trip is planned."


@pytest.mark.django_db
def test_an_agent_exception_ends_run_with_its_stored_error_event(client, svc, failing_agent):
    session = svc.create_session_sync(app_name=failing_agent, user_id="ann")
    response = post(client, "/api/run", run_body(session, "hello"))
    assert response.status_code == 200
    [error] = response.json()  # ADK 2 records a failing node's exception itself
    assert error["author"] == "failing" and error["errorCode"] == "RuntimeError"
    assert error["errorMessage"] == "the model is down"
    stored = Event.objects.filter(session__session_id=session.id).order_by("seq")
    assert [(e.author, e.error_code) for e in stored] == [("user", None), ("failing", "RuntimeError")]
    assert stored[1].invocation_id == stored[0].invocation_id == error["invocationId"]


@pytest.mark.django_db
def test_stop_route_reports_how_many_runs_it_stopped(client, session):
    response = post(client, url(session, "/stop"), None)
    assert response.status_code == 200 and response.json() == {"stopped": 0}
    assert post(client, f"/api/apps/{APP}/users/bob/sessions/{session.id}/stop", None).status_code == 404


# ---- Server-Sent Events (under ASGI, through AsyncClient) --------------------


async def sse_post(body: dict, **headers) -> tuple[int, str, bytes]:
    response = await AsyncClient().post("/api/run_sse", body, content_type="application/json", headers=headers)
    if not response.streaming:
        return response.status_code, response["Content-Type"], response.content
    content = b"".join([chunk async for chunk in response.streaming_content])
    return response.status_code, response["Content-Type"], content


@pytest.mark.django_db(transaction=True)
async def test_run_sse_streams_one_frame_per_event_with_token_chunks(service):
    session = await service.create_session(app_name=APP, user_id="ann")
    code, content_type, body = await sse_post(
        run_body(session, "Hi", streaming=True), accept="text/event-stream"
    )
    assert code == 200 and content_type == "text/event-stream"
    frames = sse_frames(body)
    partial = [f for f in frames if f.get("partial")]
    [final] = [f for f in frames if not f.get("partial")]
    assert len(partial) == 3  # the demo agent's three chunks
    text = "".join(f["content"]["parts"][0]["text"] for f in partial)
    assert text == final["content"]["parts"][0]["text"]
    assert text == "Hello! Ask me to plan a trip to a city, or about the weather there."
    # the user's event and the final one: fragments are not stored
    assert await Event.objects.filter(session__session_id=session.id).acount() == 2


@pytest.mark.django_db(transaction=True)
async def test_run_sse_without_streaming_sends_whole_events(service):
    session = await service.create_session(app_name=APP, user_id="ann")
    _, _, body = await sse_post(run_body(session, "Please plan a trip to Lisbon"))
    frames = sse_frames(body)
    assert len(frames) == 3 and not any(f.get("partial") for f in frames)
    assert frames[1]["content"]["parts"][0]["functionResponse"]["response"]["destination"] == "Lisbon"


@pytest.mark.django_db(transaction=True)
async def test_run_sse_ends_a_failed_run_with_its_error_event_and_adks_error_frame(service, failing_agent):
    session = await service.create_session(app_name=failing_agent, user_id="ann")
    code, _, body = await sse_post(run_body(session, "hello", streaming=True))
    assert code == 200
    event_frame, error_frame = sse_frames(body)
    assert event_frame["errorCode"] == "RuntimeError" and event_frame["author"] == "failing"
    assert error_frame["error"] == "RuntimeError: the model is down"
    assert error_frame["error_details"]["error_type"] == "RuntimeError"
    assert error_frame["error_details"]["error_message"] == "the model is down"
    assert await Event.objects.filter(session__session_id=session.id, error_code="RuntimeError").aexists()


@pytest.mark.django_db(transaction=True)
async def test_run_sse_refuses_another_users_session_with_404_json_before_streaming(service):
    session = await service.create_session(app_name=APP, user_id="ann")
    code, content_type, body = await sse_post(
        {**run_body(session, "hi"), "userId": "bob"}, accept="text/event-stream"
    )
    assert code == 404 and content_type == "application/json" and json.loads(body)["detail"]


# ---- OpenAPI -----------------------------------------------------------------


@pytest.mark.django_db
def test_openapi_schema_and_docs_are_served_without_a_cdn(client):
    schema = client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert set(paths["/api/apps/{app_name}/users/{user_id}/sessions/{session_id}"]) == {"get", "post", "patch", "delete"}
    for route in ("/api/list-apps", "/api/run", "/api/run_sse",
                  "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}/events",
                  "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}/state"):
        assert route in paths
    assert "Event" in schema["components"]["schemas"] and "RunAgentRequest" in schema["components"]["schemas"]
    docs = client.get("/api/docs/")
    html = docs.content.decode()
    assert docs.status_code == 200 and "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn." not in html and "/api/schema/" in html



def test_the_openapi_schema_is_valid_openapi_3_1_with_no_warning():
    """drf-spectacular's own 3.1 output, ADK's pydantic schemas as they are (JSON Schema 2020-12)."""
    from django.core.management import call_command

    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    schema = json.loads(out.getvalue())
    assert schema["openapi"] == "3.1.0"
    assert _keyword_uses(schema, "nullable") == []  # 3.0's dialect, which our converter used to write


def _keyword_uses(node: object, keyword: str, path: str = "") -> list[str]:
    """Where `keyword` is used as a schema keyword (a property of that name is fine:
    google-genai's `Schema` model has a field called "nullable")."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == keyword and not path.endswith("/properties"):
                found.append(path)
            found += _keyword_uses(value, keyword, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _keyword_uses(value, keyword, f"{path}/{i}")
    return found
