"""Calls and time per graph node of a session (sessions_app.node_stats),
the timeline rows that name their nodes, and the graph on the app and session pages."""
from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from asgiref.sync import async_to_sync
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from runtime_app import runs
from sessions_app import node_stats, timeline
from sessions_app.models import Session as SessionRow
from tests.conftest import close_worker_connections

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]


def add(service, session, ts: float, invocation: str, author: str, *parts: types.Part, path: str = "", **kwargs) -> None:
    content = types.Content(role="user" if author == "user" else "model", parts=list(parts)) if parts else None
    event = Event(author=author, invocation_id=invocation, timestamp=ts, content=content, node_info={"path": path}, **kwargs)
    service.append_event_sync(session, event)


def call(name: str, call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))


def answer(name: str, call_id: str) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True}))


def text(words: str) -> types.Part:
    return types.Part(text=words)


@pytest.fixture
def trip(service):
    """Two invocations of trip_planner with exact timestamps: a tool, a transfer, a
    sub-agent's tool, parallel tool results, a workflow node and marks that are no work."""
    session = service.create_session_sync(app_name="trip_planner", user_id="ann", session_id="graph-1")
    add(service, session, 100.0, "i1", "user", text("Please plan a trip to Kyoto"))
    add(service, session, 101.0, "i1", "trip_planner", call("plan_trip", "c1"), path="trip_planner@1")
    add(service, session, 101.25, "i1", "trip_planner", answer("plan_trip", "c1"), path="trip_planner@1")
    add(service, session, 103.0, "i1", "trip_planner", text("Done!"), path="trip_planner@1")
    add(service, session, 103.5, "i1", "trip_planner", path="trip_planner@1", actions=EventActions(end_of_agent=True))
    add(service, session, 200.0, "i2", "user", text("What is the weather in Kyoto?"))
    add(service, session, 200.5, "i2", "trip_planner", call("transfer_to_agent", "c2"), path="trip_planner@1")
    add(service, session, 200.6, "i2", "trip_planner", answer("transfer_to_agent", "c2"), path="trip_planner@1")
    add(service, session, 201.0, "i2", "weather_expert", call("get_weather", "c3"), call("plan_trip", "c4"),
        path="trip_planner@1/weather_expert@1")
    add(service, session, 201.5, "i2", "weather_expert", answer("get_weather", "c3"), answer("plan_trip", "c4"),
        path="trip_planner@1/weather_expert@1")
    add(service, session, 202.0, "i2", "weather_expert", text("Rain."), path="trip_planner@1/weather_expert@1")
    add(service, session, 202.5, "i2", "pipeline", path="pipeline@1/step_one@1", output="one")
    add(service, session, 300.0, "i3", "weather_expert", text("An event with no prompt before it in its invocation."))
    return SessionRow.objects.select_related("app").get(session_id="graph-1")


def test_each_node_counts_its_work_and_the_time_since_the_event_before_it(trip):
    stats, upto = node_stats.node_stats(trip)
    assert upto == 13
    got = {key: (s.calls, round(s.seconds, 6)) for key, s in stats.items()}
    assert got == {
        "trip_planner": (3, 3.25),  # 1.0 to its call, 1.75 to "Done!" after the tool, 0.5 to the transfer
        "plan_trip": (2, 0.75),  # 0.25 alone, then 0.5 in parallel with get_weather
        "transfer_to_agent": (1, 0.1),
        "weather_expert": (3, 0.9),  # 0.4 + 0.5, and 0 for the first event of invocation i3
        "get_weather": (1, 0.5),
        "step_one": (1, 0.5),  # an ADK 2.x workflow node, by node_info.path; its output is its work
    }  # the user's messages and the end-of-agent mark count for no node


def test_a_row_names_its_nodes_as_the_stats_count_them(trip):
    views, _ = timeline.page(trip)
    assert [(v.seq, v.nodes, v.took) for v in views][:5] == [
        (1, [], None), (2, ["trip_planner"], 1.0), (3, ["plan_trip"], 0.25), (4, ["trip_planner"], 1.75),
        (5, ["trip_planner"], None),  # the end-of-agent mark: its agent's, but no work
    ]
    assert views[9].nodes == ["get_weather", "plan_trip"]
    totals: dict[str, list[float]] = {}
    for view in views:
        for key in view.nodes if view.took is not None else []:
            totals.setdefault(key, []).append(view.took)
    stats, _ = node_stats.node_stats(trip)
    assert {k: (len(v), round(sum(v), 6)) for k, v in totals.items()} == {k: (s.calls, round(s.seconds, 6)) for k, s in stats.items()}


def test_a_row_the_live_push_renders_alone_has_its_time_too(trip):
    # The websocket renders one row at a time (sessions_app.broadcast): its previous event is not in the list.
    only = timeline.views_for(trip, [trip.events.get(seq=4)])[0]
    assert (only.nodes, only.took) == (["trip_planner"], 1.75)


def test_the_session_page_draws_the_graph_with_counts_and_rows_name_their_nodes(client, trip):
    html = client.get(f"/sessions/{trip.pk}/?at=1").content.decode()  # every row: #1 is not on the first screen
    graph_card = re.search(r'<section class="card agent-graph".*?</section>', html, re.S).group(0)
    assert 'data-stats-seq="13"' in graph_card
    assert re.search(r'data-node="trip_planner"[^>]*data-calls="3" data-seconds="3.250000"', graph_card)
    assert ">3 calls · 3.2 s</text>" in graph_card and ">1 call · 500 ms</text>" in graph_card
    row = re.search(r'<article id="event-10"[^>]*>', html).group(0)
    keys = json.loads(html_lib.unescape(re.search(r'data-node="([^"]*)"', row).group(1)))
    assert keys == ["get_weather", "plan_trip"] and 'data-took="0.500000"' in row
    user_row = re.search(r'<article id="event-1"[^>]*>', html).group(0)
    assert "data-node" not in user_row and "data-took" not in user_row
    assert "runtime_app/graph.js" in html and "runtime_app/graph.css" in html


def test_the_app_page_draws_the_graph_without_counts(client):
    html = client.get("/apps/trip_planner/").content.decode()
    graph_card = re.search(r'<section class="card agent-graph".*?</section>', html, re.S).group(0)
    assert "data-stats-seq" not in graph_card and "data-calls" not in graph_card
    assert all(f'data-node="{k}"' in graph_card for k in ("trip_planner", "plan_trip", "weather_expert", "get_weather"))


def test_an_app_that_is_no_agent_here_has_no_graph(client, service):
    session = service.create_session_sync(app_name="imported_app", user_id="ann", session_id="s-1")
    add(service, session, 1.0, "i1", "someone", text("hi"))
    row = SessionRow.objects.get(session_id="s-1")
    assert "agent-graph" not in client.get(f"/sessions/{row.pk}/").content.decode()
    assert "agent-graph" not in client.get("/apps/imported_app/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_real_run_of_the_demo_agent_is_counted_per_node(service):
    service.create_session_sync(app_name="trip_planner", user_id="ann", session_id="graph-run")
    row = SessionRow.objects.select_related("app").get(session_id="graph-run")
    for words in ("Please plan a trip to Kyoto", "What is the weather in Kyoto?"):
        run = runs.run_agent(runs.RunRequest(key=row.key, new_message=types.Content(role="user", parts=[text(words)])))

        async def drain() -> None:
            async for _ in run:
                pass

        async_to_sync(drain)()
        close_worker_connections()
    stats, _ = node_stats.node_stats(row)
    assert {k: s.calls for k, s in stats.items()} == {
        "trip_planner": 3, "plan_trip": 1, "transfer_to_agent": 1, "weather_expert": 2, "get_weather": 1,
    }
    assert all(s.seconds >= 0 for s in stats.values())


@pytest.mark.django_db
def test_the_counts_cover_only_the_newest_window_of_events(service):
    session = service.create_session_sync(app_name="trip_planner", user_id="ann", session_id="windowed")
    for i in range(5):
        add(service, session, float(i + 1), f"i{i}", "trip_planner", text(f"reply {i}"))
    row = SessionRow.objects.get(session_id="windowed")
    stats, upto = node_stats.node_stats(row, window=2)
    assert upto == 5 and stats["trip_planner"].calls == 2
    stats, _ = node_stats.node_stats(row)
    assert stats["trip_planner"].calls == 5
