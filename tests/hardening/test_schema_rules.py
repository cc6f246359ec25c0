"""Rules the server enforces are stated in /api/schema/ (#29 item 8), and say what the server does:
each value the stated rule forbids is refused, each one it allows gets past that rule."""
from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

APP, USER = "trip_planner", "ann"
EVAL_SETS = f"/api/dev/apps/{APP}/eval-sets"


@pytest.fixture(scope="module")
def openapi(django_db_blocker) -> dict[str, Any]:
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()


def component(openapi: dict[str, Any], template: str, method: str) -> dict[str, Any]:
    schema = openapi["paths"][template][method]["requestBody"]["content"]["application/json"]["schema"]
    return openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]


def allows(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(schema).is_valid(value)


@pytest.mark.django_db
def test_an_eval_set_id_is_stated_as_the_file_name_adk_takes(client, openapi) -> None:
    body = component(openapi, "/api/dev/apps/{app_name}/eval-sets", "post")
    eval_set = openapi["components"]["schemas"][body["properties"]["evalSet"]["$ref"].rsplit("/", 1)[-1]]
    id_schema = eval_set["properties"]["eval_set_id"]
    assert id_schema["pattern"] and id_schema["maxLength"] == 255
    legacy = openapi["paths"]["/api/dev/apps/{app_name}/eval_sets/{eval_set_id}"]["post"]["parameters"]
    assert next(p for p in legacy if p["name"] == "eval_set_id")["schema"]["pattern"] == id_schema["pattern"]
    for value in ["has-dash", "dot.ted", "", "   ", "nul\x00"]:
        assert not allows(id_schema, value)
        answer = client.post(EVAL_SETS, {"evalSet": {"eval_set_id": value, "eval_cases": []}}, content_type="application/json")
        assert answer.status_code == 400, value
    for value in ["ok_1", " padded "]:
        assert allows(id_schema, value)
        answer = client.post(EVAL_SETS, {"evalSet": {"eval_set_id": value, "eval_cases": []}}, content_type="application/json")
        assert answer.status_code == 200 and answer.json()["eval_set_id"] == value.strip()


@pytest.mark.django_db
def test_a_case_id_added_from_a_session_is_stated_non_blank(client, openapi) -> None:
    eval_id = component(openapi, "/api/dev/apps/{app_name}/eval-sets/{eval_set_id}/add-session", "post")["properties"]["evalId"]
    assert eval_id["maxLength"] == 255
    client.post(EVAL_SETS, {"evalSet": {"eval_set_id": "s", "eval_cases": []}}, content_type="application/json")
    for value in ["", " \t", "a\x00b"]:
        assert not allows(eval_id, value)
        answer = client.post(f"{EVAL_SETS}/s/add-session", {"evalId": value, "sessionId": "x", "userId": USER},
                             content_type="application/json")
        assert answer.status_code == 400, value  # named: evalId, or the body for a NUL anywhere in it
    assert allows(eval_id, " c1 ") and allows(eval_id, "case é")


def test_an_eval_case_is_stated_to_have_exactly_one_conversation_kind(openapi) -> None:
    case = component(openapi, "/api/dev/apps/{app_name}/eval-sets/{eval_set_id}/eval-cases/{eval_case_id}", "put")
    assert case["not"]  # neither both nor none; the case's own fields stay one object for client generators
    shape = {**case, "components": openapi["components"]}
    assert allows(shape, {"evalId": "c", "conversation": []})
    assert allows(shape, {"evalId": "c", "conversation": None, "conversationScenario": {"startingPrompt": "hi",
                                                                                         "conversationPlan": "ask"}})
    assert not allows(shape, {"evalId": "c"})
    assert not allows(shape, {"evalId": "c", "conversation": [], "conversationScenario": {"startingPrompt": "hi",
                                                                                          "conversationPlan": "ask"}})


@pytest.mark.django_db
def test_a_run_is_stated_to_need_a_metric(client, openapi) -> None:
    metrics = component(openapi, "/api/dev/apps/{app_name}/eval-sets/{eval_set_id}/run", "post")["properties"]["evalMetrics"]
    assert metrics["minItems"] == 1
    client.post(EVAL_SETS, {"evalSet": {"eval_set_id": "r", "eval_cases": []}}, content_type="application/json")
    answer = client.post(f"{EVAL_SETS}/r/run", {"evalMetrics": []}, content_type="application/json")
    assert answer.status_code == 400


def test_an_artifact_name_is_stated_free_of_control_characters(openapi) -> None:
    template = "/api/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts"
    filename = component(openapi, template, "post")["properties"]["filename"]
    for value in ["a\nb", "tab\there", "del\x7f", "nul\x00", "", "  "]:
        assert not allows(filename, value), value
    assert allows(filename, "notes.txt") and allows(filename, "user:dir/é.png")


@pytest.mark.django_db
def test_a_search_query_is_stated_to_need_a_letter_or_digit(client, openapi) -> None:
    parameters = openapi["paths"]["/api/apps/{app_name}/search"]["get"]["parameters"]
    q = next(p for p in parameters if p["name"] == "q")["schema"]
    for value in ["!!", "* - *", '""', "_"]:
        assert not allows(q, value)
        answer = client.get(f"/api/apps/{APP}/search", {"q": value})
        assert answer.status_code == 400 and "q" in answer.json(), value
    for value in ["a", "7", "(x)"]:
        assert allows(q, value)
        assert client.get(f"/api/apps/{APP}/search", {"q": value}).status_code == 200


@pytest.mark.django_db
def test_a_runs_ids_are_stated_non_blank(client, openapi) -> None:
    run = component(openapi, "/api/run", "post")["properties"]
    memory = component(openapi, "/api/apps/{app_name}/users/{user_id}/memory", "patch")["properties"]["sessionId"]
    for schema in (run["appName"], run["userId"], run["sessionId"], memory):
        assert not allows(schema, "") and not allows(schema, " \n") and allows(schema, "s1")
    for field in ("appName", "userId", "sessionId"):
        body = {"appName": APP, "userId": USER, "sessionId": "s1", "newMessage": {"parts": [{"text": "hi"}]}, field: "  "}
        answer = client.post("/api/run", body, content_type="application/json")
        assert answer.status_code == 400 and field in answer.json(), field
