"""An app's agent graph: agents, sub-agents, tools and ADK 2.x workflow nodes,
as plain data and as SVG drawn here (no `dot` binary, no JS build).

The structure is ADK's own: `serialize_agent`, what ADK's dev server feeds
adk-web's 2.x graph. ADK's older DOT builder (`cli.agent_graph.build_graph`)
does not serve: on 2.13 it fails on a `Workflow`, it resolves toolsets (an MCP
toolset connects to its server) and its DOT text is lossy for odd names.

Nodes are keyed by name, as ADK's graph names them; the timeline's rows name
the nodes that produced each event by the same keys (`sessions_app.node_stats.
event_node_keys`), so the page's script can light up and count nodes live.
"""
from __future__ import annotations

import hashlib
import logging
import re
import xml.etree.ElementTree as ET
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from google.adk.apps.app import App as AdkApp
from google.adk.cli.utils.graph_serialization import serialize_agent

from sessions_app import node_stats
from sessions_app.models import Session
from sessions_app.node_stats import NodeStats
from sessions_app.sandbox import real_app_name

from . import agents

logger = logging.getLogger(__name__)

KINDS = {"agent", "workflow", "tool", "function", "join", "node"}
START = "__START__"  # ADK's name for a workflow's entry, drawn as an edge from the workflow itself

NODE_W, NODE_H = 136, 44
GAP_X, GAP_Y, PAD = 28, 14, 8
LOOP_DIP = 36  # how far below its nodes an edge that goes back (a loop) dips
LABEL_CHARS = 16  # what fits a line of a node at 12px; a longer name takes two lines, its whole self in <title>
LINE_H = 14  # a label's second line makes every node of that graph this much taller
_BREAKS = "_-. "  # where a long name is best wrapped: after one of these, as near the line's end as can be
SVG_NS = "http://www.w3.org/2000/svg"
# Characters XML 1.0 does not allow at all: a name holding one would make the SVG not well-formed.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


@dataclass(frozen=True)
class Node:
    key: str  # the name events are matched by
    kind: str  # one of KINDS
    label: str
    parent: str | None  # the key of the agent or workflow it belongs to

    @property
    def dom_id(self) -> str:
        """A stable id for any name (a name may hold anything an id may not)."""
        return "graph-node-" + hashlib.sha1(self.key.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""  # a workflow edge's route
    tool: bool = False  # an agent's tool: drawn without an arrow, as ADK draws it


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def add_node(self, key: str, kind: str, parent: str | None) -> None:
        if key and all(n.key != key for n in self.nodes):  # a tool two agents share is one node, as in ADK's graph
            self.nodes.append(Node(key=key, kind=kind, label=key, parent=parent))

    def add_edge(self, edge: Edge) -> None:
        if edge.source and edge.target and edge not in self.edges:
            self.edges.append(edge)


# ---- the structure, from ADK's serialization ---------------------------------


def agent_graph(root: Any) -> Graph:
    """The graph of an agent (an ADK `App`'s root agent for an App), root first."""
    agent = root.root_agent if isinstance(root, AdkApp) else root
    graph = Graph()
    _walk(graph, serialize_agent(agent), parent=None)
    return graph


def _walk(graph: Graph, item: dict[str, Any], parent: str | None) -> None:
    name = str(item.get("name") or "")
    if not name:
        return
    graph.add_node(name, _kind(item), parent)
    for tool in [str(t.get("name") or "") for t in _dicts(item.get("tools"))]:
        graph.add_node(tool, "tool", name)
        graph.add_edge(Edge(name, tool, tool=True))
    for child in [*_dicts(item.get("sub_agents")), *_dicts(item.get("nodes"))]:
        graph.add_edge(Edge(name, str(child.get("name") or "")))
        _walk(graph, child, name)
    workflow = item.get("graph") if isinstance(item.get("graph"), dict) else {}
    for child in _dicts(workflow.get("nodes")):
        if child.get("name") != START:
            _walk(graph, child, name)
    for edge in _dicts(workflow.get("edges")):
        source = str((edge.get("from_node") or {}).get("name") or "")
        target = str((edge.get("to_node") or {}).get("name") or "")
        route = edge.get("route")
        graph.add_edge(Edge(name if source == START else source, target, "" if route is None else str(route)))


def _kind(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind in KINDS:
        return kind
    return "workflow" if item.get("graph") else "agent"


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def for_app(name: str) -> Graph | None:
    """The graph of the agents folder's app `name`; None when it is no agent there or does not load."""
    return for_loaded(agents.find(name))


def for_loaded(loaded: agents.LoadedAgent | None) -> Graph | None:
    if loaded is None or not loaded.ok:
        return None
    try:
        return agent_graph(loaded.root)
    except Exception:  # an agent ADK cannot serialize costs its graph, never the page
        logger.warning("Could not build the agent graph of %s.", loaded.name, exc_info=True)
        return None


# ---- a layered layout, left to right -----------------------------------------


@dataclass(frozen=True)
class Place:
    node: Node
    x: int
    y: int
    layer: int


def layout(graph: Graph) -> dict[str, Place]:
    """Layers by distance from the root (breadth first over edges and belonging);
    within a layer, each node level with the nodes leading to it, then each node
    level with the nodes it leads to (a parent beside its children), never two
    overlapping. Deterministic: the same graph gives the same picture."""
    layers = _layers(graph)
    height = node_height(graph)
    before, after = _neighbours(graph)
    depth = {node.key: d for d, layer in enumerate(layers) for node in layer}
    ys: dict[str, float] = {}
    for d, layer in enumerate(layers):
        _stack(layer, ys, {n.key: _mean([ys[k] for k in before[n.key] if depth.get(k, d) < d]) for n in layer}, height)
    for d in range(len(layers) - 2, -1, -1):
        _stack(layers[d], ys, {n.key: _mean([ys[k] for k in after[n.key] if depth.get(k, d) > d]) for n in layers[d]}, height)
    top = min(ys.values(), default=0.0)
    return {
        node.key: Place(node, PAD + d * (NODE_W + GAP_X), PAD + round(ys[node.key] - top), d)
        for d, layer in enumerate(layers) for node in layer
    }


def node_height(graph: Graph) -> int:
    """NODE_H, or taller for the whole graph when a name needs a second line."""
    lines = max((len(label_lines(n.label)) for n in graph.nodes), default=1)
    return NODE_H + LINE_H * (lines - 1)


def label_lines(label: str) -> list[str]:
    """A name as it fits a node: one line, or two wrapped after a separator near the
    first line's end (else at its end); a name too long even for two ends in "…"."""
    if len(label) <= LABEL_CHARS:
        return [label]
    cut = max((i + 1 for i, c in enumerate(label[:LABEL_CHARS]) if c in _BREAKS), default=LABEL_CHARS)
    first, rest = label[:cut], label[cut:]
    return [first, rest if len(rest) <= LABEL_CHARS else rest[: LABEL_CHARS - 1] + "…"]


def _stack(layer: list[Node], ys: dict[str, float], wanted: dict[str, float | None], height: int) -> None:
    """Put each node of a layer at its wanted height (kept where it is, or below
    the last, when it wants none), in that order, pushed down where they would overlap."""
    def want(node: Node) -> float:
        value = wanted[node.key]
        return value if value is not None else ys.get(node.key, 0.0)

    floor = None
    for node in sorted(layer, key=want):  # sorted() is stable: ties keep the order nodes were found in
        y = want(node) if floor is None else max(want(node), floor)
        ys[node.key] = y
        floor = y + height + GAP_Y


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _neighbours(graph: Graph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """What leads to each node and what each leads to: its edges, and for a node
    no edge leads to, what it belongs to (a workflow's nodes follow its edges)."""
    before: dict[str, list[str]] = defaultdict(list)
    after: dict[str, list[str]] = defaultdict(list)
    targets = {e.target for e in graph.edges}
    links = [(e.source, e.target) for e in graph.edges]
    links += [(n.parent, n.key) for n in graph.nodes if n.parent and n.key not in targets]
    for source, target in links:
        after[source].append(target)
        before[target].append(source)
    return before, after


def _layers(graph: Graph) -> list[list[Node]]:
    if not graph.nodes:
        return []
    nodes = {n.key: n for n in graph.nodes}
    _, after = _neighbours(graph)
    root = graph.nodes[0].key
    depth, order, queue = {root: 0}, [root], deque([root])
    while queue:
        key = queue.popleft()
        for nxt in after[key]:
            if nxt in nodes and nxt not in depth:
                depth[nxt] = depth[key] + 1
                order.append(nxt)
                queue.append(nxt)
    order += [n.key for n in graph.nodes if n.key not in depth]  # unreachable: none the walk makes, kept for safety
    layers: list[list[Node]] = [[] for _ in range(max(depth.values()) + 1)]
    for key in order:
        layers[depth.get(key, 0)].append(nodes[key])
    return layers


# ---- SVG ---------------------------------------------------------------------


def stats_text(stats: NodeStats | None) -> str:
    """"3 calls · 1.2 s" (static/runtime_app/graph.js says it the same way)."""
    if stats is None or stats.calls == 0:
        return "not called"
    calls = f"{stats.calls} call{'' if stats.calls == 1 else 's'}"
    took = f"{stats.seconds * 1000:.0f} ms" if stats.seconds < 0.9995 else f"{stats.seconds:.1f} s"
    return f"{calls} · {took}"


def svg(graph: Graph, stats: dict[str, NodeStats] | None = None) -> SafeString:
    """The graph as an inline <svg>: classes for every look (graph.css), no style
    attribute; each node a <g> with a stable id and `data-node` = its key. With
    `stats` (a session's), each node shows its calls and time and carries them
    as data-calls / data-seconds for the live updates."""
    places = layout(graph)
    node_h = node_height(graph)
    width, height = _size(graph, places, node_h)
    root = ET.Element("svg", {
        "xmlns": SVG_NS, "class": "agent-graph-svg", "viewBox": f"0 0 {width} {height}",
        "width": str(width), "height": str(height), "role": "img", "aria-label": "agent graph",
    })
    _arrow(root)
    for edge in graph.edges:
        if edge.source in places and edge.target in places:
            _edge(root, edge, places[edge.source], places[edge.target], node_h)
    for place in places.values():
        _node(root, place, stats, node_h)
    return mark_safe(ET.tostring(root, encoding="unicode"))  # ElementTree escapes every name and label


def _size(graph: Graph, places: dict[str, Place], node_h: int) -> tuple[int, int]:
    width = max((p.x + NODE_W for p in places.values()), default=0) + PAD
    height = max((p.y + node_h for p in places.values()), default=0) + PAD
    if any(_goes_back(places[e.source], places[e.target]) for e in graph.edges if e.source in places and e.target in places):
        height += LOOP_DIP
    return width, height


def _goes_back(source: Place, target: Place) -> bool:
    return target.layer <= source.layer


def _arrow(root: ET.Element) -> None:
    defs = ET.SubElement(root, "defs")
    marker = ET.SubElement(defs, "marker", {
        "id": "graph-arrow", "viewBox": "0 0 10 10", "refX": "10", "refY": "5",
        "markerWidth": "7", "markerHeight": "7", "orient": "auto-start-reverse",
    })
    ET.SubElement(marker, "path", {"d": "M 0 0 L 10 5 L 0 10 z", "class": "graph-arrow"})


def _edge(root: ET.Element, edge: Edge, source: Place, target: Place, node_h: int) -> None:
    if _goes_back(source, target):  # a loop or a step within one layer: under the nodes
        x1, y1 = source.x + NODE_W // 2, source.y + node_h
        x2, y2 = target.x + NODE_W // 2, target.y + node_h
        dip = max(y1, y2) + LOOP_DIP
        path = f"M {x1} {y1} C {x1} {dip}, {x2} {dip}, {x2} {y2}"
        middle = ((x1 + x2) // 2, dip - 4)
    else:
        x1, y1 = source.x + NODE_W, source.y + node_h // 2
        x2, y2 = target.x, target.y + node_h // 2
        bend = (x2 - x1) // 2
        path = f"M {x1} {y1} C {x1 + bend} {y1}, {x2 - bend} {y2}, {x2} {y2}"
        middle = ((x1 + x2) // 2, (y1 + y2) // 2 - 3)
    attrs = {"d": path, "class": "graph-edge tool-edge" if edge.tool else "graph-edge"}
    if not edge.tool:
        attrs["marker-end"] = "url(#graph-arrow)"
    ET.SubElement(root, "path", attrs)
    if edge.label:
        label = ET.SubElement(root, "text", {"x": str(middle[0]), "y": str(middle[1]), "class": "graph-edge-label"})
        label.text = _xml(edge.label)


def _node(root: ET.Element, place: Place, stats: dict[str, NodeStats] | None, node_h: int) -> None:
    node = place.node
    attrs = {
        "id": node.dom_id, "class": f"graph-node kind-{node.kind}", "data-node": _xml(node.key),
        "data-kind": node.kind, "transform": f"translate({place.x} {place.y})",
    }
    mine = (stats or {}).get(node.key)
    if stats is not None:
        attrs |= {"data-calls": str(mine.calls if mine else 0), "data-seconds": f"{mine.seconds if mine else 0.0:.6f}"}
    group = ET.SubElement(root, "g", attrs)
    ET.SubElement(group, "title").text = _xml(f"{node.key} ({node.kind})")
    ET.SubElement(group, "rect", {"width": str(NODE_W), "height": str(node_h), "rx": "8"})
    lines = label_lines(node.label)
    for i, text in enumerate(lines):
        ET.SubElement(group, "text", {"x": "10", "y": str(18 + LINE_H * i), "class": "graph-label"}).text = _xml(text)
    line = stats_text(mine) if stats is not None else node.kind
    ET.SubElement(group, "text", {"x": "10", "y": str(35 + LINE_H * (len(lines) - 1)), "class": "graph-stats"}).text = line


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


# ---- what the pages show -----------------------------------------------------


def app_svg(loaded: agents.LoadedAgent | None) -> SafeString | None:
    """The app page's graph: structure only."""
    graph = for_loaded(loaded)
    return None if graph is None else svg(graph)


def session_context(session: Session) -> dict[str, Any]:
    """The session page's graph, with each node's calls and time in the session
    and the last event those count (the page's script counts newer ones live)."""
    graph = for_app(real_app_name(session.app.name))  # a sandbox's session: its agent's graph
    if graph is None:
        return {}
    stats, upto = node_stats.node_stats(session)
    windowed = node_stats.WINDOW if session.revision > node_stats.WINDOW else None
    return {"agent_graph": svg(graph, stats), "graph_stats_seq": upto, "graph_stats_window": windowed}
