"""What one timeline row shows, built the same way for the page, "load older",
the websocket catch-up and the live push (all render partials/event_row.html);
and what newer events change in rows a page already shows (`Updates`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from google.adk.events.event import Event as AdkEvent

from . import health, node_stats, selectors
from .models import SCOPE_PREFIXES, Event, Session, StateChange

PAGE_SIZE = 50  # a page of "load older"
# The session page opens on this many of the newest events: more than the timeline's box shows
# on a large screen, and each row costs about a third of a millisecond to build and render;
# scrolling up to the top loads older pages of PAGE_SIZE.
FIRST_PAGE = 12


@dataclass
class Part:
    kind: str  # text | call | response | code | data | other
    text: str = ""
    name: str = ""
    call_id: str = ""
    value: Any = None
    is_error: bool = False
    paired: Any = None  # the matching call (for a response) or response (for a call)


@dataclass
class EventView:
    row: Event
    event: AdkEvent
    parts: list[Part]
    changes: list[StateChange]
    new_invocation: bool
    badges: list[tuple[str, str]] = field(default_factory=list)
    partial: bool = False
    compacted_range: tuple[int, int] | None = None  # first and last seq a compaction summary replaces
    rewound: bool = False  # undone by a later rewind event
    # The agent-graph nodes that produced it, and the seconds it took them (None: not a node's work).
    nodes: list[str] = field(default_factory=list)
    took: float | None = None

    @property
    def seq(self) -> int:
        return self.row.seq

    @property
    def is_error(self) -> bool:
        return bool(self.event.error_code) or any(p.is_error for p in self.parts)

    @property
    def kinds(self) -> list[str]:
        """The filter kinds this event belongs to (see `selectors.Filters.apply`)."""
        tool = self.row.has_function_call or self.row.has_function_response
        kinds = ["tool"] if tool else ([] if self.row.error_code else ["text"])
        if self.changes:
            kinds.append("state")
        if self.row.has_error:  # an error code or a tool's error response: the health count's test
            kinds.append("error")
        return kinds

    @property
    def nodes_json(self) -> str:
        """`nodes` for the row's data-node attribute (any name survives JSON; the page's JS reads it)."""
        return json.dumps(self.nodes)

    def meta(self) -> dict[str, Any]:
        return {
            "seq": self.row.seq,
            "author": self.row.author,
            "invocation": self.row.invocation_id,
            "final": self.row.is_final_response,
            "kinds": self.kinds,
        }


def _parts(event: AdkEvent) -> list[Part]:
    parts: list[Part] = []
    for part in (event.content.parts if event.content else None) or []:
        if part.function_call is not None:
            call = part.function_call
            parts.append(Part("call", name=call.name or "", call_id=call.id or "", value=call.args or {}))
        elif part.function_response is not None:
            resp = part.function_response
            value = resp.response or {}
            parts.append(
                Part("response", name=resp.name or "", call_id=resp.id or "", value=value, is_error=health.is_tool_error(value))
            )
        elif part.text is not None:
            parts.append(Part("text", text=part.text, is_error=False, value="thought" if part.thought else None))
        elif part.executable_code is not None:
            parts.append(Part("code", text=part.executable_code.code or ""))
        elif part.code_execution_result is not None:
            parts.append(Part("code", text=part.code_execution_result.output or ""))
        elif part.inline_data is not None:
            blob = part.inline_data
            parts.append(Part("data", name=blob.mime_type or "", value=len(blob.data or b"")))
        else:
            parts.append(Part("other", value=part.model_dump(mode="json", exclude_none=True)))
    return parts


def _badges(event: AdkEvent) -> list[tuple[str, str]]:
    actions = event.actions
    badges: list[tuple[str, str]] = []
    if event.error_code:
        badges.append(("error", f"error {event.error_code}"))
    if actions.transfer_to_agent:
        badges.append(("transfer", f"→ {actions.transfer_to_agent}"))
    if actions.escalate:
        badges.append(("escalate", "escalate"))
    if actions.skip_summarization:
        badges.append(("kind", "skip summarization"))
    if actions.compaction is not None:
        badges.append(("compaction", "compaction"))
    if actions.rewind_before_invocation_id:
        badges.append(("transfer", f"rewind before {actions.rewind_before_invocation_id}"))
    if actions.artifact_delta:
        badges.append(("kind", "artifacts: " + ", ".join(actions.artifact_delta)))
    if event.long_running_tool_ids:
        badges.append(("kind", "long-running"))
    return badges


def build_views(rows: list[Event], *, previous_invocation: str | None) -> list[EventView]:
    """View models for consecutive rows (oldest first), calls paired with responses."""
    changes = selectors.changes_by_event([r.pk for r in rows])
    views: list[EventView] = []
    by_call_id: dict[str, Part] = {}
    for row in rows:
        event = AdkEvent.model_validate(row.data)
        view = EventView(
            row=row,
            event=event,
            parts=_parts(event),
            changes=changes.get(row.pk, []),
            new_invocation=row.invocation_id != previous_invocation,
            badges=_badges(event),
        )
        _pair(view.parts, by_call_id)
        previous_invocation = row.invocation_id
        views.append(view)
    return views


def _pair(parts: list[Part], by_call_id: dict[str, Part]) -> None:
    for part in parts:
        if part.kind == "call" and part.call_id:
            by_call_id[part.call_id] = part
        elif part.kind == "response" and part.call_id in by_call_id:
            part.paired = by_call_id[part.call_id]
            by_call_id[part.call_id].paired = part


def _pair_with_later_responses(session: Session, views: list[EventView]) -> None:
    """A call whose response is not on this page (a newer page, or not yet pushed
    when the row was): look the response up in its invocation, so a row renders
    the same whichever page, or push, brought it."""
    missing = {p.call_id: p for v in views for p in v.parts if p.kind == "call" and p.paired is None and p.call_id}
    if not missing:
        return
    invocations = {v.row.invocation_id for v in views if any(p.kind == "call" and p.call_id in missing for p in v.parts)}
    for event in selectors.function_response_events(session, invocations):
        for part in _parts(event):
            if part.kind == "response" and part.call_id in missing:
                missing[part.call_id].paired = part


def _pair_with_earlier_calls(session: Session, views: list[EventView]) -> None:
    """A response whose call is not on this page: look the call up in its invocation."""
    missing = {p.call_id: (v, p) for v in views for p in v.parts if p.kind == "response" and p.paired is None and p.call_id}
    if not missing:
        return
    invocations = {v.row.invocation_id for v, _ in missing.values()}
    for event in selectors.function_call_events(session, invocations):
        for part in _parts(event):
            if part.kind == "call" and part.call_id in missing:
                missing[part.call_id][1].paired = part


def page(session: Session, *, before: int | None = None, filters: selectors.Filters = selectors.Filters(), size: int = PAGE_SIZE) -> tuple[list[EventView], bool]:
    """The newest `size` events (before seq `before`), oldest first; and whether older ones exist."""
    rows = selectors.event_rows_before(session, before=before, filters=filters, limit=size + 1)
    has_older = len(rows) > size
    # Unfiltered, the extra row read to learn `has_older` is the event just before the page.
    previous = (rows[size] if has_older else None) if not filters.active else UNKNOWN
    rows = rows[:size][::-1]
    return views_for(session, rows, previous=previous), has_older


@dataclass
class PageAt:
    views: list[EventView]
    has_older: bool
    snapshot: bool  # the page ends at the asked event: newer events are not shown, so it is not live


def page_at(session: Session, at: int | None, *, filters: selectors.Filters = selectors.Filters(),
            size: int = FIRST_PAGE) -> PageAt:
    """The page that shows event #`at` (a shared address): the newest `size` events when
    they hold #`at`, else the newest PAGE_SIZE when those do, so the page stays live; else the
    page that ends at #`at`."""
    views, has_older = page(session, filters=filters, size=size)
    if at is None or not has_older or (views and at >= views[0].seq):
        return PageAt(views, has_older, snapshot=False)
    if size < PAGE_SIZE:
        views, has_older = page(session, filters=filters, size=PAGE_SIZE)
        if not has_older or (views and at >= views[0].seq):
            return PageAt(views, has_older, snapshot=False)
    views, has_older = page(session, filters=filters, before=at + 1)
    return PageAt(views, has_older, snapshot=True)


def after(session: Session, seq: int, *, upto: int, filters: selectors.Filters = selectors.Filters(), limit: int = 500) -> list[EventView]:
    """Events with `seq` < sequence number <= `upto`, oldest first (websocket catch-up)."""
    return views_for(session, selectors.event_rows_after(session, seq, upto=upto, filters=filters, limit=limit))


UNKNOWN: Any = object()  # `previous` of `views_for` when the caller has not read it


def views_for(session: Session, rows: list[Event], *, previous: Event | None = UNKNOWN) -> list[EventView]:
    """Views of consecutive stored rows, oldest first; `previous`: the event stored
    just before the first (None: there is none), when the caller has read it."""
    if not rows:
        return []
    if previous is UNKNOWN:
        previous_invocation = selectors.previous_invocation_id(session, rows[0].seq)
    else:
        previous_invocation = previous.invocation_id if previous is not None else None
    views = build_views(rows, previous_invocation=previous_invocation)
    _pair_with_earlier_calls(session, views)
    _pair_with_later_responses(session, views)
    _name_compacted_ranges(session, views)
    _mark_rewound(session, views)
    _charge_nodes(session, views, previous)
    return views


def _charge_nodes(session: Session, views: list[EventView], first_previous: Event | None = UNKNOWN) -> None:
    """Which graph nodes produced each event and its time, as `node_stats.node_stats` counts them."""
    previous = _previous_events_on_page(views, first_previous)
    if previous is None:
        previous = node_stats.previous_events(session, [v.seq for v in views])
    for view in views:
        view.nodes = node_stats.event_node_keys(view.row.data)
        if node_stats.event_is_work(view.row.data, view.nodes):
            view.took = node_stats.seconds_taken(view.row.timestamp, previous.get(view.seq - 1), view.row.invocation_id)


def _previous_events_on_page(views: list[EventView], first_previous: Event | None) -> dict[int, tuple[str, float]] | None:
    """`node_stats.previous_events` of a page of consecutive events whose previous event
    is known, read off the page itself; None when it cannot be (a filtered page)."""
    if first_previous is UNKNOWN or any(b.seq != a.seq + 1 for a, b in zip(views, views[1:])):
        return None
    if first_previous is not None and first_previous.seq != views[0].seq - 1:
        return None
    rows = ([first_previous] if first_previous is not None else []) + [v.row for v in views]
    return {row.seq: (row.invocation_id, row.timestamp) for row in rows}


def _mark_rewound(session: Session, views: list[EventView]) -> None:
    """Events a later rewind undid: from its target invocation's first event to the rewind."""
    ranges = selectors.rewound_ranges(session)
    for view in views:
        view.rewound = any(start <= view.seq < end for start, end in ranges)


@dataclass
class Updates:
    """How newer events change rows a page may already show (#`since` and older):
    the rows a rewind undid get their mark, and calls get paired with their response."""

    rewound: list[int] = field(default_factory=list)  # sequence numbers
    answered: list[EventView] = field(default_factory=list)  # call rows, paired


def updates(session: Session, rows: list[Event], *, since: int) -> Updates:
    """What the newer events `rows` change in rows #`since` and older."""
    return Updates(
        rewound=_rewound_by(session, [r for r in rows if r.rewind_before], since),
        answered=_answered_by(session, [r for r in rows if r.has_function_response], since),
    )


def updates_after(session: Session, seq: int, *, upto: int, limit: int) -> Updates:
    """What the events after #`seq` (up to #`upto`) change in rows #`seq` and older,
    whatever filters a viewer has (a filtered-out rewind still undid its rows)."""
    return updates(session, selectors.rows_marking_earlier(session, seq, upto=upto, limit=limit), since=seq)


def _rewound_by(session: Session, rewinds: list[Event], since: int) -> list[int]:
    if not rewinds:
        return []
    ends = {r.seq for r in rewinds}
    undone: set[int] = set()
    for start, end in selectors.rewound_ranges(session):
        if end in ends:
            undone.update(range(start, min(end, since + 1)))
    return sorted(undone)


def _answered_by(session: Session, responses: list[Event], since: int) -> list[EventView]:
    parts = [p for r in responses for p in _parts(AdkEvent.model_validate(r.data))]
    call_ids = {p.call_id for p in parts if p.kind == "response" and p.call_id}
    if not call_ids:
        return []
    rows = selectors.function_call_rows(session, {r.invocation_id for r in responses}, upto=since)
    views = views_for(session, rows)
    return [v for v in views if any(p.kind == "call" and p.call_id in call_ids for p in v.parts)]


def _name_compacted_ranges(session: Session, views: list[EventView]) -> None:
    """Which stored events (by seq) each compaction summary stands for."""
    for view in views:
        compaction = view.event.actions.compaction
        if compaction is None:
            continue
        view.compacted_range = selectors.seq_range_between(
            session, compaction.start_timestamp, compaction.end_timestamp, before_seq=view.seq
        )


def partial_view(session: Session, event: AdkEvent) -> EventView:
    """A streaming (partial) event: shown, never stored."""
    row = Event(session=session, seq=0, event_id=event.id, invocation_id=event.invocation_id, author=event.author,
                timestamp=event.timestamp, data={})
    return EventView(row=row, event=event, parts=_parts(event), changes=[], new_invocation=False, partial=True)



def filter_query(params: Mapping[str, str]) -> str:
    """The timeline filters of a query string, to carry over into links."""
    keep = {k: v for k, v in params.items() if k in ("author", "invocation", "kind", "final_only") and v}
    return urlencode(keep)


def state_panel(session: Session, seq: int | None) -> dict[str, Any]:
    """The state panel: the state now (or as of event `seq`), keys that event changed marked."""
    state = selectors.current_state(session) if seq is None else selectors.state_as_of(session, seq)
    changed = set()
    if seq is not None:
        changed = {SCOPE_PREFIXES[c.scope] + c.key for c in selectors.changes_of(session, seq) if not c.is_rewrite}
    rows = [
        {"scope": scope, "key": SCOPE_PREFIXES[scope] + key, "value": value, "changed": SCOPE_PREFIXES[scope] + key in changed}
        for scope, values in state.by_scope()
        for key, value in sorted(values.items())
    ]
    return {"state_rows": rows, "state_seq": seq}
