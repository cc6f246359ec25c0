"""The agent graph: its structure from ADK's serialization, its layout and its SVG."""
from __future__ import annotations

import re

import pytest
from defusedxml import ElementTree
from google.adk import Workflow
from google.adk.agents import LlmAgent
from google.adk.tools import BaseTool

from runtime_app import graph
from runtime_app.demo_agents.trip_planner.agent import root_agent as trip_planner
from sessions_app.node_stats import NodeStats

SVG = "{http://www.w3.org/2000/svg}"


def shape(g: graph.Graph) -> list[tuple[str, str, str | None]]:
    return [(n.key, n.kind, n.parent) for n in g.nodes]


def nodes_of(svg: str) -> dict[str, ElementTree.Element]:
    """The drawn nodes of an SVG, by their key, parsed as XML (so it must be well-formed)."""
    root = ElementTree.fromstring(svg)
    return {g.get("data-node"): g for g in root.iter(f"{SVG}g")}


def test_the_trip_planner_graph_has_its_agents_sub_agent_and_tools():
    g = graph.for_app("trip_planner")
    assert shape(g) == [
        ("trip_planner", "agent", None),
        ("plan_trip", "tool", "trip_planner"),
        ("weather_expert", "agent", "trip_planner"),
        ("get_weather", "tool", "weather_expert"),
    ]
    assert [(e.source, e.target, e.tool) for e in g.edges] == [
        ("trip_planner", "plan_trip", True),
        ("trip_planner", "weather_expert", False),
        ("weather_expert", "get_weather", True),
    ]


def test_the_memory_demo_graph_is_its_app_s_root_agent_and_its_four_tools():
    g = graph.for_app("memory_demo")  # the package exposes an ADK App, not a bare agent
    assert shape(g) == [
        ("notes_keeper", "agent", None),
        *[(tool, "tool", "notes_keeper") for tool in ("save_note", "remember_preference", "load_memory", "preload_memory")],
    ]
    assert {(e.source, e.target) for e in g.edges} == {
        ("notes_keeper", t) for t in ("save_note", "remember_preference", "load_memory", "preload_memory")
    }


def classify(node_input: str) -> str:
    return "yes"


def on_yes(node_input: str) -> str:
    return "fine"


def on_no(node_input: str) -> str:
    return "again"


def test_an_adk_2_workflow_shows_its_nodes_and_routed_edges():
    helper = LlmAgent(name="helper", model="gemini-2.5-flash", tools=[on_yes])
    flow = Workflow(name="pipeline", edges=[("START", classify, {"yes": on_yes, "no": on_no}), (on_no, helper)])
    g = graph.agent_graph(flow)
    assert shape(g) == [
        ("pipeline", "workflow", None),
        ("classify", "function", "pipeline"),
        ("on_yes", "function", "pipeline"),
        ("on_no", "function", "pipeline"),
        ("helper", "agent", "pipeline"),
    ]
    edges = {(e.source, e.target, e.label) for e in g.edges}
    assert {("pipeline", "classify", ""), ("classify", "on_yes", "yes"), ("classify", "on_no", "no"), ("on_no", "helper", "")} <= edges
    assert ("helper", "on_yes", "") in edges  # the agent's tool: one node with the function node of that name
    svg = graph.svg(g)
    assert set(nodes_of(svg)) == {"pipeline", "classify", "on_yes", "on_no", "helper"}
    assert ">yes</text>" in svg and ">no</text>" in svg  # routes are labelled


def test_a_workflow_is_layered_by_its_edges_and_a_loop_goes_back_under_the_nodes():
    flow = Workflow(name="loop", edges=[("START", classify, {"yes": on_yes, "no": on_no}), (on_no, classify)])
    g = graph.agent_graph(flow)
    places = graph.layout(g)
    assert {k: p.layer for k, p in places.items()} == {"loop": 0, "classify": 1, "on_yes": 2, "on_no": 2}
    svg = ElementTree.fromstring(graph.svg(g))
    lowest = max(p.y for p in places.values()) + graph.NODE_H
    assert int(svg.get("height")) == lowest + graph.PAD + graph.LOOP_DIP  # room for the loop's curve
    paths = [el.get("d") for el in svg.iter(f"{SVG}path") if "graph-edge" in (el.get("class") or "")]
    back = f"M {places['on_no'].x + graph.NODE_W // 2} {places['on_no'].y + graph.NODE_H} "
    assert sum(d.startswith(back) for d in paths) == 1


def test_the_layout_is_layered_from_the_root_and_nothing_overlaps():
    places = graph.layout(graph.agent_graph(trip_planner))
    assert {k: p.layer for k, p in places.items()} == {"trip_planner": 0, "plan_trip": 1, "weather_expert": 1, "get_weather": 2}
    for a in places.values():
        for b in places.values():
            if a is not b and a.x == b.x:
                assert abs(a.y - b.y) >= graph.NODE_H, (a, b)
    assert places["get_weather"].y == places["weather_expert"].y  # beside what leads to it
    assert places == graph.layout(graph.agent_graph(trip_planner))  # deterministic


def test_the_svg_is_well_formed_with_every_node_keyed_and_no_style_attribute():
    g = graph.for_app("trip_planner")
    svg = graph.svg(g)
    drawn = nodes_of(svg)
    assert list(drawn) == ["trip_planner", "plan_trip", "weather_expert", "get_weather"]
    for node in g.nodes:
        assert drawn[node.key].get("id") == node.dom_id
        assert re.fullmatch(r"graph-node-[0-9a-f]{12}", node.dom_id)
        assert f"kind-{node.kind}" in drawn[node.key].get("class")
    assert "style=" not in svg and "<style" not in svg and "<script" not in svg  # the CSP forbids them
    assert svg == graph.svg(graph.for_app("trip_planner"))


def test_hostile_agent_and_tool_names_are_escaped_and_still_match_their_key():
    class Odd(BaseTool):
        pass

    def plain(x: str) -> str:
        return x

    plain.__name__ = "<img src=x onerror=alert(1)>"
    script = '</text><script>alert("x")</script>&amp;'
    agent = LlmAgent(name="host", model="gemini-2.5-flash",
                     tools=[Odd(name=script, description="odd"), Odd(name="bell\x07ring", description="odd"), plain])
    g = graph.agent_graph(agent)
    assert [n.key for n in g.nodes] == ["host", script, "bell\x07ring", "<img src=x onerror=alert(1)>"]
    svg = graph.svg(g, {script: NodeStats(calls=2, seconds=0.5)})
    drawn = nodes_of(svg)  # well-formed: the bell character is replaced, the rest escaped
    assert script in drawn and "<img src=x onerror=alert(1)>" in drawn and "bell\ufffdring" in drawn
    assert "<script" not in svg and "<img" not in svg
    assert {el.tag for el in ElementTree.fromstring(svg).iter()} == {f"{SVG}{tag}" for tag in ("svg", "defs", "marker", "path", "g", "title", "rect", "text")}
    texts = [t.text for t in drawn[script].iter(f"{SVG}text")]
    # No separator to wrap after: a line's worth, then the rest cut to fit; the whole name in <title>.
    assert texts == ['</text><script>a', 'lert("x")</scri…', "2 calls · 500 ms"]
    assert drawn[script].find(f"{SVG}title").text == f"{script} (tool)"


def test_a_session_svg_carries_each_node_s_counts():
    g = graph.agent_graph(trip_planner)
    drawn = nodes_of(graph.svg(g, {"trip_planner": NodeStats(calls=3, seconds=1.25), "plan_trip": NodeStats(1, 0.004)}))
    assert (drawn["trip_planner"].get("data-calls"), drawn["trip_planner"].get("data-seconds")) == ("3", "1.250000")
    stats = {key: [t.text for t in el.iter(f"{SVG}text")][1] for key, el in drawn.items()}
    assert stats == {"trip_planner": "3 calls · 1.2 s", "plan_trip": "1 call · 4 ms",
                     "weather_expert": "not called", "get_weather": "not called"}
    assert drawn["weather_expert"].get("data-calls") == "0"
    plain = nodes_of(graph.svg(g))  # the app page: no counts
    assert plain["trip_planner"].get("data-calls") is None
    assert [t.text for t in plain["plan_trip"].iter(f"{SVG}text")][1] == "tool"


@pytest.mark.parametrize(("calls", "seconds", "text"), [
    (1, 0.0, "1 call · 0 ms"), (2, 0.9994, "2 calls · 999 ms"), (2, 0.9996, "2 calls · 1.0 s"), (12, 75.04, "12 calls · 75.0 s"),
])
def test_stats_read_as_calls_and_time(calls, seconds, text):
    assert graph.stats_text(NodeStats(calls, seconds)) == text


def test_an_agent_adk_cannot_serialize_costs_its_graph_not_the_page(monkeypatch):
    def broken(agent):
        raise RuntimeError("cannot serialize")

    monkeypatch.setattr(graph, "serialize_agent", broken)
    assert graph.for_app("trip_planner") is None
    assert graph.for_app("no_such_app") is None


def test_a_long_name_wraps_onto_a_second_line_and_every_node_of_its_graph_grows():
    assert graph.label_lines("plan_trip") == ["plan_trip"]
    assert graph.label_lines("remember_preference") == ["remember_", "preference"]
    assert graph.label_lines("a_very_long_tool_name_indeed_yes") == ["a_very_long_", "tool_name_indeed_yes"[:15] + "…"]
    agent = LlmAgent(name="keeper", model="gemini-2.5-flash", tools=[remember_preference])
    g = graph.agent_graph(agent)
    assert graph.node_height(g) == graph.NODE_H + graph.LINE_H
    drawn = nodes_of(graph.svg(g))
    tool = drawn["remember_preference"]
    assert [t.text for t in tool.iter(f"{SVG}text")] == ["remember_", "preference", "tool"]
    assert {el.find(f"{SVG}rect").get("height") for el in drawn.values()} == {str(graph.NODE_H + graph.LINE_H)}
    assert graph.node_height(graph.agent_graph(trip_planner)) == graph.NODE_H  # short names: as before


def remember_preference(value: str) -> str:
    return value
