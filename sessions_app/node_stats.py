"""Which agent-graph node produced an event, and what each node did in a session.

Nodes are named as ADK's graph serialization names them (runtime_app.graph):
agents, tools and workflow nodes by their names. One rule serves the
timeline's rows (`data-node`) and the session's per-node counts, so a page's
live updates add up to what a reload shows.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet
from google.adk.events.event import NodeInfo

from .models import Event, Session


@dataclass
class NodeStats:
    calls: int = 0
    seconds: float = 0.0


def event_node_keys(data: dict[str, Any]) -> list[str]:
    """The graph nodes that produced a stored event (its JSON): the tools whose
    results it carries; else the workflow node its `node_info.path` ends in
    (ADK 2.x); else its author. The user's own messages come from no node."""
    parts = (data.get("content") or {}).get("parts") or []
    tools = [(p.get("function_response") or {}).get("name") for p in parts if isinstance(p, dict)]
    if keys := list(dict.fromkeys(t for t in tools if t)):
        return keys
    author = data.get("author") or ""
    if author == "user":
        return []
    name = NodeInfo.model_validate(data.get("node_info") or {}).name or author
    return [name] if name else []


def event_is_work(data: dict[str, Any], node_keys: list[str]) -> bool:
    """Whether an event is a node's work (a model turn or error, a tool result, a
    workflow node's output), not a mark such as a state patch or an agent checkpoint.
    `node_keys`: its `event_node_keys`, which each caller needs too."""
    if data.get("partial") or not node_keys:
        return False
    has_content = bool((data.get("content") or {}).get("parts"))
    return has_content or bool(data.get("error_code")) or data.get("output") is not None


def seconds_taken(timestamp: float, previous: tuple[str, float] | None, invocation_id: str) -> float:
    """An event's time: since the event just before it, when that is of the same
    invocation (a model's turn since its prompt's last event, a tool's run since
    its call); else unknown, counted as 0."""
    if previous is None or previous[0] != invocation_id:
        return 0.0
    return max(timestamp - previous[1], 0.0)


def previous_events(session: Session, seqs: list[int]) -> dict[int, tuple[str, float]]:
    """(invocation id, timestamp) of the events just before #`seqs`, by their seq."""
    rows = Event.objects.filter(session=session, seq__in=[s - 1 for s in seqs])
    return {seq: (invocation, ts) for seq, invocation, ts in rows.values_list("seq", "invocation_id", "timestamp")}


# The session page counts at most this many of the newest events: the counts
# read each event's JSON, and a page must not cost what the whole session weighs.
WINDOW = 5000


def node_stats(session: Session, window: int = WINDOW) -> tuple[dict[str, NodeStats], int]:
    """Calls and seconds per graph node over the session's newest `window` events
    (see `event_node_keys`, `event_is_work`, `seconds_taken`), and the last seq counted.

    Events are only ever appended, so while a session's whole history fits the
    window each process keeps its counts and adds only the events stored since
    (the session page asks on every view; a session of 5 000 events otherwise
    reads all their JSON each time)."""
    if session.revision > window:
        return _count(session, after=session.revision - window, tally=_Tally()).result()
    key = (session.pk, session.session_id, session.create_time)
    with _tallies_lock:
        cached = _tallies.get(key)
    tally = _count(session, after=0, tally=cached.copy()) if cached is not None else None
    if tally is None:  # not counted yet, or no longer the history counted (a session replaced)
        tally = _count(session, after=0, tally=_Tally())
    with _tallies_lock:
        _tallies[key] = tally
        _tallies.move_to_end(key)
        while len(_tallies) > TALLIES_KEPT:
            _tallies.popitem(last=False)
    return tally.result()


TALLIES_KEPT = 256  # sessions whose counts each process keeps


@dataclass
class _Tally:
    """Counts up to event #`last`, and that event's (seq, invocation, timestamp)."""

    stats: dict[str, NodeStats] = field(default_factory=dict)
    previous: tuple[int, str, float] | None = None
    last: int = 0

    def copy(self) -> _Tally:
        stats = {k: NodeStats(v.calls, v.seconds) for k, v in self.stats.items()}
        return _Tally(stats, self.previous, self.last)

    def add(self, seq: int, invocation: str, ts: float, data: dict[str, Any]) -> None:
        node_keys = event_node_keys(data)
        if event_is_work(data, node_keys):
            previous = self.previous
            before = previous[1:] if previous and previous[0] == seq - 1 else None
            took = seconds_taken(ts, before, invocation)
            for key in node_keys:
                counted = self.stats.setdefault(key, NodeStats())
                counted.calls += 1
                counted.seconds += took
        self.previous, self.last = (seq, invocation, ts), seq

    def result(self) -> tuple[dict[str, NodeStats], int]:
        return {k: NodeStats(v.calls, v.seconds) for k, v in self.stats.items()}, self.last


_tallies: OrderedDict[tuple[int, str, float], _Tally] = OrderedDict()
_tallies_lock = threading.Lock()


def _count(session: Session, *, after: int, tally: _Tally) -> _Tally | None:
    """`tally` with the events after #`after` added, or when it has counted some, those
    after its last; None when the event it counted last is no longer the one stored."""
    if not tally.last:
        rows = _rows(session, seq__gt=after)
        for seq, invocation, ts, data in rows.iterator(chunk_size=500):  # a window may be thousands of events
            tally.add(seq, invocation, ts, data)
        return tally
    rows = list(_rows(session, seq__gte=tally.last))  # the last one counted again: it must be the same
    if not rows or rows[0][:3] != tally.previous:
        return None
    for seq, invocation, ts, data in rows[1:]:
        tally.add(seq, invocation, ts, data)
    return tally


def _rows(session: Session, **seq: int) -> QuerySet:
    return Event.objects.filter(session=session, **seq).order_by("seq").values_list(
        "seq", "invocation_id", "timestamp", "data"
    )
