"""An invocation's trace: agent runs, model calls and tool calls as a tree laid out in time."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sessions_app.models import Session

from . import selectors
from .models import Recorded


@dataclass
class Row:
    kind: str  # agent | model | tool
    record: Recorded
    depth: int
    left_pct: float = 0.0
    width_pct: float = 0.0
    event_seq: int | None = None
    children: list[Row] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.record.error) or bool(getattr(self.record, "failed", False))

    @property
    def unfinished(self) -> bool:
        return self.record.duration_ms is None

    @property
    def indent_em(self) -> float:
        return round(self.depth * 1.2, 1)


@dataclass
class Trace:
    invocation_id: str
    rows: list[Row]
    started_at: float | None
    duration_ms: float

    @property
    def empty(self) -> bool:
        return not self.rows


def invocation_trace(session: Session, invocation_id: str) -> Trace:
    agents, models, tools = selectors.invocation_records(session, invocation_id)
    rows = [Row("agent", r, 0) for r in agents] + [Row("model", r, 0) for r in models] + [Row("tool", r, 0) for r in tools]
    if not rows:
        return Trace(invocation_id, [], None, 0.0)
    seqs = selectors.event_seqs(session, {getattr(r.record, "event_id", "") for r in rows})
    start = min(r.record.started_at for r in rows)
    end = max(end_of(r.record, start) for r in rows)
    span = max(end - start, 1e-6)
    for row in rows:
        row.event_seq = seqs.get(getattr(row.record, "event_id", ""))
        row.left_pct = round((row.record.started_at - start) / span * 100, 2)
        row.width_pct = max(round((end_of(row.record, end) - row.record.started_at) / span * 100, 2), 0.4)
    flat = _flatten(_tree(rows))
    placed = {id(r) for r in flat}
    flat += [r for r in rows if id(r) not in placed]  # parent cycles: only in corrupt data
    return Trace(invocation_id, flat, start, round((end - start) * 1000, 3))


def end_of(record: Recorded, fallback: float) -> float:
    """When a record ended; an unfinished one lasts until `fallback` (the trace's end)."""
    return record.ended_at if record.ended_at is not None else max(fallback, record.started_at)


def _tree(rows: list[Row]) -> list[Row]:
    by_span = {r.record.span_id: r for r in rows}
    children: dict[str, list[Row]] = defaultdict(list)
    roots = []
    for row in rows:
        parent = row.record.parent_span_id
        if parent and parent in by_span and parent != row.record.span_id:
            children[parent].append(row)
        else:
            roots.append(row)
    for span_id, kids in children.items():
        by_span[span_id].children = sorted(kids, key=_order)
    return sorted(roots, key=_order)


def _order(row: Row) -> tuple[float, int, int]:
    return (row.record.started_at, {"agent": 0, "model": 1, "tool": 2}[row.kind], row.record.pk)


def _flatten(roots: list[Row]) -> list[Row]:
    flat: list[Row] = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        row, depth = stack.pop()
        row.depth = depth
        flat.append(row)
        stack += [(c, depth + 1) for c in reversed(row.children)]
    return flat

