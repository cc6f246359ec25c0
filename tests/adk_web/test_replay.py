"""adk-web's own request sequence, sent to our /api and to ADK's server side by side.

Each step is a call adk-web makes (google/adk/cli/browser's services: list
apps, pick one, open a session, chat, look at the trace and the graph, make an
eval set from the session, run it, read the results). Where both servers can
answer, the status codes and the JSON shapes must be equal (and the values,
where nothing random is in them); where ADK's server cannot (its eval engine
needs `google-adk[eval]`), ours must parse as ADK's own response model.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from fastapi.testclient import TestClient
from google.adk.cli.api_server import AppInfo
from google.adk.cli.dev_server import ListMetricsInfoResponse, RunEvalResponse
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_result import EvalSetResult

from eval_app.models import EvalRun

from .conftest import APP, body, content, shape, sse_events

pytestmark = pytest.mark.django_db(transaction=True)
USER = "user"
MESSAGE = {"role": "user", "parts": [{"text": "Please plan a trip to Kyoto"}]}
METRICS = [{"metricName": "tool_trajectory_avg_score", "threshold": 1},
           {"metricName": "response_match_score", "threshold": 0.8}]


class Both:
    """One adk-web call, sent to us (under /api, where runtime-config.json points) and to ADK."""

    def __init__(self, ours: Client, adk: TestClient) -> None:
        self.ours, self.adk = ours, adk

    def send(self, method: str, path: str, data: Any = None, headers: dict[str, str] | None = None) -> tuple[Any, Any]:
        ours = self.ours.generic(method, "/api" + path, b"" if data is None else json.dumps(data).encode(),
                                 content_type="application/json", headers=headers or {})
        theirs = self.adk.request(method, path, json=data, headers=headers or {})
        return ours, theirs

    def same(self, method: str, path: str, data: Any = None, **headers: str) -> tuple[Any, Any]:
        """Both answer with one status code and one JSON shape; returns both bodies."""
        ours, theirs = self.send(method, path, data, headers)
        assert ours.status_code == theirs.status_code, (path, ours.status_code, theirs.status_code, theirs.text[:300])
        mine, adks = body(ours), theirs.json()
        assert shape(mine) == shape(adks), (path, mine, adks)
        return mine, adks


def _chat(both: Both) -> tuple[str, str, list[dict[str, Any]], list[dict[str, Any]]]:
    # ADK's server keeps its (in-memory) app: and user: state from test to test; ours starts empty.
    ours, adks = both.send("POST", f"/apps/{APP}/users/{USER}/sessions")
    assert ours.status_code == adks.status_code == 200
    ours, adks = body(ours), adks.json()
    assert set(ours) == set(adks)
    run = {"appName": APP, "userId": USER, "newMessage": MESSAGE, "streaming": False}
    mine = both.ours.post("/api/run_sse", {**run, "sessionId": ours["id"]}, content_type="application/json")
    theirs = both.adk.post("/run_sse", json={**run, "sessionId": adks["id"]})
    my_events = sse_events(content(mine))
    their_events = sse_events(theirs.content)
    assert [e["author"] for e in my_events] == [e["author"] for e in their_events] == [APP] * 3
    # adk-web then reloads the session: the same keys, and the same events (the user's first).
    mine = body(both.ours.get(f"/api/apps/{APP}/users/{USER}/sessions/{ours['id']}"))
    theirs = both.adk.get(f"/apps/{APP}/users/{USER}/sessions/{adks['id']}").json()
    assert set(mine) == set(theirs)
    assert [(e["author"], e["id"]) for e in mine["events"][1:]] == [(e["author"], e["id"]) for e in my_events]
    assert [e["author"] for e in mine["events"]] == [e["author"] for e in theirs["events"]] == ["user"] + [APP] * 3
    return ours["id"], adks["id"], my_events, their_events


def test_the_app_routes_answer_what_adks_answer(client: Client, adk: TestClient) -> None:
    both = Both(client, adk)
    assert both.same("GET", "/list-apps?relative_path=./")[0] == ["memory_demo", "trip_planner"]
    mine, adks = both.same("GET", "/list-apps?detailed=true")
    assert mine == adks
    both.same("POST", f"/apps/{APP}/users/{USER}/sessions", {"sessionId": "gone"})
    assert both.same("DELETE", f"/apps/{APP}/users/{USER}/sessions/gone") == (None, None)  # JSON null, both
    mine, adks = both.same("GET", "/version")
    assert mine == adks
    assert both.same("GET", "/health")[0] == {"status": "ok"}
    mine, adks = both.send("GET", "/config/telemetry")
    assert mine.status_code == adks.status_code == 200 and set(body(mine)) == set(adks.json()) == {"telemetry"}
    mine, adks = both.same("GET", f"/apps/{APP}/app-info")
    assert mine == adks and AppInfo.model_validate(mine).agents
    for path in ("/build_graph", "/build_graph_image", "/build_graph_image?dark_mode=true",
                 "/build_graph_image?node=trip_planner/weather_expert", "/graph", "/graph?dark_mode=true"):
        mine, adks = both.same("GET", f"/dev/apps/{APP}{path}")
        assert mine == adks, path


def test_the_trace_of_a_chat_has_adks_spans_for_the_same_events(client: Client, adk: TestClient) -> None:
    both = Both(client, adk)
    my_sid, their_sid, my_events, their_events = _chat(both)
    mine, adks = both.send("GET", f"/dev/apps/{APP}/debug/trace/session/{my_sid}")
    theirs = both.adk.get(f"/dev/apps/{APP}/debug/trace/session/{their_sid}")
    assert mine.status_code == theirs.status_code == 200
    mine, adks = body(mine), theirs.json()
    # The same keys on every span (ids are strings here: ours are 128-bit, past what JavaScript numbers hold).
    assert {frozenset(s) for s in mine} == {frozenset(s) for s in adks} == {frozenset(
        {"name", "start_time", "end_time", "trace_id", "span_id", "parent_span_id", "attributes", "logs"})}

    def adk_spans(spans: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
        """The agent, model and tool spans, each with the position of the event it produced."""
        position = {e["id"]: i for i, e in enumerate(events)}
        wanted = ("invoke_agent", "generate_content", "execute_tool")
        return sorted((s["name"], position.get(s["attributes"].get("gcp.vertex.agent.event_id")))
                      for s in spans if s["attributes"].get("gen_ai.operation.name") in wanted)

    assert adk_spans(mine, my_events) == adk_spans(adks, their_events) == [
        ("execute_tool plan_trip", 1), ("generate_content scripted", 0), ("generate_content scripted", 2),
        ("invoke_agent trip_planner", None)]
    for span in mine:
        assert span["end_time"] >= span["start_time"] > 1.7e18  # nanoseconds, not "0us"
    by_id = {s["span_id"]: s for s in mine}
    model = next(s for s in mine if s["name"] == "generate_content scripted")
    assert by_id[model["parent_span_id"]]["name"] == "invoke_agent trip_planner"
    their_model = next(s for s in adks if s["name"] == "generate_content scripted")
    required = {"gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.conversation.id", "gcp.vertex.agent.event_id",
                "gcp.vertex.agent.invocation_id", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                "gen_ai.response.finish_reasons", "gen_ai.request.model"}
    assert required <= set(model["attributes"]) and required <= set(their_model["attributes"])
    same = ("gen_ai.usage.input_tokens", "gen_ai.response.finish_reasons", "gen_ai.provider.name",
            "gen_ai.tool.definitions")  # the last two: #29
    assert {k: model["attributes"][k] for k in same} == {k: their_model["attributes"][k] for k in same}
    # The GenAI attributes ADK 2.13 gives its agent and tool spans (#29), value for value.
    for name, keys in (("invoke_agent trip_planner", ("gen_ai.agent.description",)),
                       ("execute_tool plan_trip", ("gen_ai.tool.description", "gen_ai.tool.type", "gen_ai.tool.name"))):
        ours, theirs = (next(s["attributes"] for s in spans if s["name"] == name) for spans in (mine, adks))
        assert {k: ours[k] for k in keys} == {k: theirs[k] for k in keys}, name
    # What adk-web shows as the event's Request and Response.
    assert "Please plan a trip to Kyoto" in model["attributes"]["gcp.vertex.agent.llm_request"]
    assert "plan_trip" in model["attributes"]["gcp.vertex.agent.llm_response"]

    mine, adks = both.send("GET", f"/dev/apps/{APP}/debug/trace/{my_events[0]['id']}")
    theirs = both.adk.get(f"/dev/apps/{APP}/debug/trace/{their_events[0]['id']}").json()
    assert mine.status_code == 200 and required <= set(body(mine)) & set(theirs)
    assert {"trace_id", "span_id"} <= set(body(mine)) & set(theirs)
    both.same("GET", f"/dev/apps/{APP}/debug/trace/no-such-event")


def test_an_eval_set_made_and_run_from_a_chat_as_adk_web_does(client: Client, adk: TestClient,
                                                              eval_worker: None) -> None:
    both = Both(client, adk)
    my_sid, their_sid, _, _ = _chat(both)
    assert both.same("GET", f"/dev/apps/{APP}/eval_sets") == ([], [])
    new_set = {"eval_set": {"eval_set_id": "kyoto", "model_execution_mode": None, "eval_cases": []}}
    mine, adks = both.same("POST", f"/dev/apps/{APP}/eval-sets", new_set)
    assert {k: v for k, v in mine.items() if k != "creation_timestamp"} == {
        k: v for k, v in adks.items() if k != "creation_timestamp"}
    both.same("POST", f"/dev/apps/{APP}/eval-sets", new_set)  # taken: 400 {"detail": ...}
    assert both.same("GET", f"/dev/apps/{APP}/eval-sets") == ({"evalSetIds": ["kyoto"]},) * 2

    # adk-web proposes the session's id as the case id.
    mine, adks = both.send("POST", f"/dev/apps/{APP}/eval_sets/kyoto/add_session",
                           {"evalId": "from_chat", "sessionId": my_sid, "userId": USER})
    theirs = both.adk.post(f"/dev/apps/{APP}/eval_sets/kyoto/add_session",
                           json={"evalId": "from_chat", "sessionId": their_sid, "userId": USER})
    assert mine.status_code == theirs.status_code == 200 and body(mine) is None and theirs.json() is None
    assert both.same("GET", f"/dev/apps/{APP}/eval_sets/kyoto/evals") == (["from_chat"],) * 2
    mine, adks = both.send("GET", f"/dev/apps/{APP}/eval_sets/kyoto/evals/from_chat")
    mine, adks = body(mine), adks.json()
    assert set(mine) == set(adks) and AdkEvalCase.model_validate(mine).conversation
    turn, their_turn = mine["conversation"][0], adks["conversation"][0]
    assert set(turn) == set(their_turn) and turn["finalResponse"] == their_turn["finalResponse"]
    assert set(turn["intermediateData"]) == set(their_turn["intermediateData"]) == {"invocationEvents"}  # #29
    assert [e["author"] for e in turn["intermediateData"]["invocationEvents"]] == [
        e["author"] for e in their_turn["intermediateData"]["invocationEvents"]]

    # Edit it, as adk-web's case editor sends it back.
    edited = {k: mine[k] for k in ("evalId", "conversation", "sessionInput", "creationTimestamp")}
    assert both.same("PUT", f"/dev/apps/{APP}/eval_sets/kyoto/evals/from_chat", edited) == (None, None)
    both.same("PUT", f"/dev/apps/{APP}/eval_sets/kyoto/evals/from_chat", {**edited, "evalId": "other"})

    mine, adks = both.same("GET", f"/dev/apps/{APP}/metrics-info")
    assert mine == adks  # ADK's whole registry, as ADK's server lists it (adkui's state metric is in it)
    infos = ListMetricsInfoResponse.model_validate(mine).metrics_info
    assert {"tool_trajectory_avg_score", "final_session_state_match", "token_usage_v1"} <= {
        i.metric_name for i in infos}

    run = {"eval_case_ids": ["from_chat"], "eval_metrics": METRICS}
    mine, adks = both.send("POST", f"/dev/apps/{APP}/eval-sets/kyoto/run", run)
    assert mine.status_code == adks.status_code == 200, adks.text[:300]
    mine = body(mine)  # streamed: read once
    [result] = RunEvalResponse.model_validate(mine).run_eval_results
    assert (result.eval_id, result.final_eval_status.name, result.user_id) == ("from_chat", "PASSED", USER)
    [their_result] = RunEvalResponse.model_validate(adks.json()).run_eval_results
    assert _scores(result) == _scores(their_result) == {
        "tool_trajectory_avg_score": 1.0, "response_match_score": 1.0, "tool_call_count_v1": 1.0,
        "inference_call_count_v1": 2.0}
    assert shape(mine) == shape(adks.json())
    assert EvalRun.objects.get().status == EvalRun.COMPLETED  # an ordinary run, on /evals/ too

    [result_id] = body(client.get(f"/api/dev/apps/{APP}/eval-results"))["evalResultIds"]
    assert body(client.get(f"/api/dev/apps/{APP}/eval_results")) == [result_id]
    stored = EvalSetResult.model_validate(body(client.get(f"/api/dev/apps/{APP}/eval_results/{result_id}")))
    [case] = stored.eval_case_results
    assert case.session_details.id == result.session_id and case.session_details.events
    assert case.eval_metric_result_per_invocation[0].expected_invocation.final_response
    assert both.send("GET", f"/dev/apps/{APP}/eval-results/{result_id}")[0].status_code == 200
    # ADK's server stored its own result of the same run: ours has its shape, session and all.
    [their_id] = [i for i in adk.get(f"/dev/apps/{APP}/eval-results").json()["evalResultIds"] if "_kyoto_" in i]
    theirs = adk.get(f"/dev/apps/{APP}/eval-results/{their_id}").json()
    mine = body(client.get(f"/api/dev/apps/{APP}/eval-results/{result_id}"))
    assert shape(mine) == shape(theirs)

    assert both.same("DELETE", f"/dev/apps/{APP}/eval_sets/kyoto/evals/from_chat") == (None, None)
    both.same("GET", f"/dev/apps/{APP}/eval_sets/kyoto/evals/from_chat")  # 404


def _scores(result: Any) -> dict[str, float | None]:
    """A run result's overall score per metric, but for the two that measure time and tokens."""
    return {m.metric_name: m.score for m in result.overall_eval_metric_results
            if m.metric_name not in ("invocation_duration_v1", "token_usage_v1")}


@pytest.mark.parametrize("method, path, data, headers", [
    ("GET", "/apps/no_such_app/app-info", None, {}),
    ("POST", "/config/telemetry", {"telemetry": True}, {}),  # without adk-web's header
    ("GET", f"/dev/apps/{APP}/eval_sets/no_such_set/evals", None, {}),
    ("GET", f"/dev/apps/{APP}/eval_sets/no_such_set/evals/nope", None, {}),
    ("GET", f"/dev/apps/{APP}/eval_results/no_such_result", None, {}),
    ("GET", f"/dev/apps/{APP}/eval-results/{APP}_x_99999999999999999999", None, {}),
    ("POST", f"/dev/apps/{APP}/eval_sets/no_such_set/add_session",
     {"evalId": "e", "sessionId": "no-such-session", "userId": USER}, {}),
    ("GET", f"/dev/apps/{APP}/debug/trace/session/no-such-session", None, {}),
])
def test_refusals_have_adks_status_and_shape(client: Client, adk: TestClient, method, path, data, headers) -> None:
    Both(client, adk).same(method, path, data, **headers)


@pytest.mark.parametrize("method, path", [
    ("GET", f"/dev/apps/{APP}/builder"), ("POST", f"/dev/apps/{APP}/builder/save"),
    ("POST", f"/dev/apps/{APP}/builder/cancel"), ("POST", f"/dev/apps/{APP}/deploy/cloud_run"),
])
def test_the_agent_builder_and_deploy_answer_as_adks_do_when_off(client: Client, adk_remote: TestClient,
                                                                  method, path) -> None:
    ours, theirs = Both(client, adk_remote).send(method, path)
    assert ours.status_code == theirs.status_code == 403
    assert set(body(ours)) == set(theirs.json()) == {"detail"}


def test_deploy_defaults_are_refused_too(client: Client) -> None:
    """ADK answers them to anyone (the agent's .env and gcloud project); with deploying off, we keep them."""
    response = client.get(f"/api/dev/apps/{APP}/deploy/defaults")
    assert response.status_code == 403 and "deploy" in response.json()["detail"]


def test_with_logins_on_the_refusal_is_still_json_and_needs_no_login(client: Client, settings: Any) -> None:
    settings.ADKUI_LOCAL_DEV = False
    response = client.post(f"/api/dev/apps/{APP}/builder/save")
    assert response.status_code == 403 and "adk web" in response.json()["detail"]
    assert client.get("/api/health").json() == {"status": "ok"}  # for load balancers, as ADK's
    assert client.get("/api/version").status_code in (401, 403)  # the rest of ADK's routes need a login
