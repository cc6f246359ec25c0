"""Edit and continue over the API and the form: the fork's ids back, and a bad edit a 400 naming its field that creates nothing."""
from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from inspector_app.models import ModelCall
from runtime_app import demo
from sessions_app.models import App, Event, Session
from tests.runtime_app.test_edit_continue import _weather_invocation_calls

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def handoff() -> ModelCall:
    async_to_sync(demo._run_demo)()
    return _weather_invocation_calls(demo.demo_session())[0]


def _continue(client: Client, call: ModelCall, body: object):
    return client.post(f"/api/dev/model-calls/{call.pk}/continue", body, content_type="application/json")


def _counts() -> tuple[int, int, int]:
    return Session.objects.count(), Event.objects.count(), App.objects.count()


def test_the_api_continues_an_edited_call_and_answers_with_the_fork(client, handoff):
    instruction = handoff.request["system_instruction"].replace("hand weather questions to weather_expert", "plan trips only")
    response = _continue(client, handoff, {"systemInstruction": instruction, "state": {"app:season": "winter"}})
    assert response.status_code == 200, response.content
    body = response.json()
    fork = Session.objects.get(pk=body["forkId"])
    assert (body["appName"], body["userId"], body["sessionId"]) == (fork.app.name, fork.user_id, fork.session_id)
    assert body["appName"].startswith("trip_planner@edit-") and body["label"] == fork.edit_label
    calls = [p["functionCall"]["name"] for e in body["events"] for p in (e.get("content") or {}).get("parts", [])
             if "functionCall" in p]
    assert calls == ["plan_trip"]
    assert body["comparisonUrl"].endswith(f"/sessions/{fork.pk}/edited/")
    # Exported as any session is, through ADK's own route, under its sandbox app.
    exported = client.get(f"/api/apps/{body['appName']}/users/{body['userId']}/sessions/{body['sessionId']}").json()
    assert exported["state"]["app:season"] == "winter" and len(exported["events"]) == Event.objects.filter(session=fork).count()


@pytest.mark.parametrize(("body", "field"), [
    ({"config": {"temperature": "hot"}}, "config.temperature"),
    ({"config": {"temprature": 0.2}}, "config.temprature"),
    ({"contents": [{"role": "user", "parts": [{"text": 3}]}]}, "contents.0.parts.0.text"),
    ({"contents": {"role": "user"}}, "contents"),
    ({"tools": [{"kind": "function"}]}, "tools.0.name"),
    ({"systemInstruction": 5}, "systemInstruction"),
    ({"state": {"temp:scratch": 1}}, "state.temp:scratch"),
    ({"state": []}, "state"),
])
def test_an_edit_adk_refuses_is_a_400_naming_the_field_and_creates_nothing(client, handoff, body, field):
    before = _counts()
    response = _continue(client, handoff, body)
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert _counts() == before


def test_an_unknown_model_call_is_a_404(client, handoff):
    before = _counts()
    response = client.post("/api/dev/model-calls/999999999/continue", {}, content_type="application/json")
    assert response.status_code == 404 and _counts() == before


def test_the_model_calls_of_a_session_are_listed_with_their_ids(client, handoff):
    session = handoff.session
    url = f"/api/dev/apps/{session.app.name}/users/{session.user_id}/sessions/{session.session_id}/model-calls"
    body = client.get(url).json()
    ids = [c["id"] for c in body["modelCalls"]]
    assert handoff.pk in ids and ids == sorted(ids) and body["nextAfter"] is None
    assert len(ids) == ModelCall.objects.filter(session=session).count()


def test_the_form_opens_with_the_stored_request_and_the_starting_state(client, handoff):
    page = client.get(f"/model-calls/{handoff.pk}/edit/").content.decode()
    assert "hand weather questions to weather_expert" in page
    assert "&quot;name&quot;: &quot;Ada&quot;" in page  # user: state as the invocation began
    assert "{user:name?}" in page  # the placeholder it fed


def test_a_bad_form_is_shown_again_with_the_field_named_and_nothing_created(client, handoff):
    before = _counts()
    form = {"system_instruction": handoff.request["system_instruction"], "contents": "[not json",
            "tools": json.dumps(handoff.request["tools"]), "config": "{}", "state_session": "{}",
            "state_user": "{}", "state_app": "{}"}
    response = client.post(f"/model-calls/{handoff.pk}/continue/", form)
    assert response.status_code == 400
    assert 'data-field="contents"' in response.content.decode()
    assert _counts() == before


@pytest.mark.parametrize("state", ['{"note": "a\\u0000b"}', '{"note": NaN}'])
def test_state_the_write_path_cannot_store_is_a_400_naming_it_and_creates_nothing(client, handoff, state):
    # Refused before the fork's transaction, by the write path's own checks; these reached it as a 500.
    before = _counts()
    form = {"system_instruction": handoff.request["system_instruction"], "contents": json.dumps(handoff.request["contents"]),
            "tools": json.dumps(handoff.request["tools"]), "config": json.dumps(handoff.request.get("config") or {}),
            "state_session": state, "state_user": "{}", "state_app": "{}"}
    response = client.post(f"/model-calls/{handoff.pk}/continue/", form)
    assert response.status_code == 400
    assert re.search(r'data-field="state(_session)?(\.note)?"', response.content.decode())
    # The API's JSON parser refuses such a body whole, as on every route, naming where in it the value was.
    response = _continue(client, handoff, '{"state": %s}' % state)
    assert response.status_code == 400 and "state.note" in response.json(), response.content
    assert _counts() == before


def test_state_over_the_size_cap_is_refused_naming_it_and_creates_nothing(client, handoff, settings):
    settings.ADKUI_MAX_STATE_BYTES = 1000
    before = _counts()
    response = _continue(client, handoff, {"state": {"note": "x" * 2000}})
    assert response.status_code == 413 and "state" in response.json(), response.content
    assert _counts() == before
