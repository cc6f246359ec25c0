"""What one timeline row shows, built the same way for the page, "load older",
the websocket catch-up and the live push (all render partials/event_row.html).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import Max, Min, Q, QuerySet
from google.adk.events.event import Event as AdkEvent

from . import selectors
from .models import SCOPE_PREFIXES, Event, Session, StateChange

PAGE_SIZE = 50
KINDS = ("text", "tool", "state", "error")


@dataclass(frozen=True)
class Filters:
    author: str = ""
    invocation: str = ""
    kind: str = ""
    final_only: bool = False

    @classmethod
    def from_query(cls, query: Any) -> Filters:
        kind = query.get("kind", "")
        return cls(
            author=query.get("author", "").strip(),
            invocation=query.get("invocation", "").strip(),
            kind=kind if kind in KINDS else "",
            final_only=query.get("final_only") in ("1", "on", "true"),
        )

    @property
    def active(self) -> bool:
        return bool(self.author or self.invocation or self.kind or self.final_only)

    def apply(self, events: QuerySet[Event]) -> QuerySet[Event]:
        if self.author:
            events = events.filter(author=self.author)
        if self.invocation:
            events = events.filter(invocation_id=self.invocation)
        if self.final_only:
            events = events.filter(Q(author="user") | Q(is_final_response=True))
        if self.kind == "tool":
            events = events.filter(Q(has_function_call=True) | Q(has_function_response=True))
        elif self.kind == "error":
            events = events.filter(error_code__isnull=False)
        elif self.kind == "state":
            events = events.filter(state_changes__isnull=False).distinct()
        elif self.kind == "text":
            events = events.filter(has_function_call=False, has_function_response=False, error_code__isnull=True)
        return events

    def matches(self, meta: dict[str, Any]) -> bool:
        """The same test on a pushed event's metadata (see `EventView.meta`)."""
        return (
            (not self.author or meta["author"] == self.author)
            and (not self.invocation or meta["invocation"] == self.invocation)
            and (not self.final_only or meta["author"] == "user" or meta["final"])
            and (not self.kind or self.kind in meta["kinds"])
        )


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

    @property
    def seq(self) -> int:
        return self.row.seq

    @property
    def is_error(self) -> bool:
        return bool(self.event.error_code) or any(p.is_error for p in self.parts)

    @property
    def kinds(self) -> list[str]:
        """The filter kinds this event belongs to (see `Filters.apply`)."""
        tool = self.row.has_function_call or self.row.has_function_response
        kinds = ["tool"] if tool else ([] if self.row.error_code else ["text"])
        if self.changes:
            kinds.append("state")
        if self.row.error_code:
            kinds.append("error")
        return kinds

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
                Part("response", name=resp.name or "", call_id=resp.id or "", value=value, is_error=_is_tool_error(value))
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


def _is_tool_error(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    return "error" in value or value.get("status") == "error"


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


def _previous_invocation(session: Session, seq: int) -> str | None:
    return (
        Event.objects.filter(session=session, seq__lt=seq).order_by("-seq").values_list("invocation_id", flat=True).first()
    )


def _pair_with_earlier_calls(session: Session, views: list[EventView]) -> None:
    """A response whose call is not on this page: look the call up in its invocation."""
    missing = {p.call_id: (v, p) for v in views for p in v.parts if p.kind == "response" and p.paired is None and p.call_id}
    if not missing:
        return
    invocations = {v.row.invocation_id for v, _ in missing.values()}
    for data in Event.objects.filter(session=session, invocation_id__in=invocations, has_function_call=True).values_list(
        "data", flat=True
    ):
        for part in _parts(AdkEvent.model_validate(data)):
            if part.kind == "call" and part.call_id in missing:
                missing[part.call_id][1].paired = part


def page(session: Session, *, before: int | None = None, filters: Filters = Filters(), size: int = PAGE_SIZE) -> tuple[list[EventView], bool]:
    """The newest `size` events (before seq `before`), oldest first; and whether older ones exist."""
    events = filters.apply(Event.objects.filter(session=session))
    if before is not None:
        events = events.filter(seq__lt=before)
    rows = list(events.order_by("-seq")[: size + 1])
    has_older = len(rows) > size
    rows = rows[:size][::-1]
    return views_for(session, rows), has_older


def after(session: Session, seq: int, *, upto: int, filters: Filters = Filters(), limit: int = 500) -> list[EventView]:
    """Events with `seq` < sequence number <= `upto`, oldest first (websocket catch-up)."""
    events = Event.objects.filter(session=session, seq__gt=seq, seq__lte=upto)
    rows = list(filters.apply(events).order_by("seq")[:limit])
    return views_for(session, rows)


def views_for(session: Session, rows: list[Event]) -> list[EventView]:
    if not rows:
        return []
    views = build_views(rows, previous_invocation=_previous_invocation(session, rows[0].seq))
    _pair_with_earlier_calls(session, views)
    _name_compacted_ranges(session, views)
    _mark_rewound(session, views)
    return views


def _mark_rewound(session: Session, views: list[EventView]) -> None:
    """Events a later rewind undid: from its target invocation's first event to the rewind."""
    rewinds = list(Event.objects.filter(session=session, rewind_before__isnull=False).values_list("seq", "rewind_before"))
    if not rewinds:
        return
    firsts = dict(
        Event.objects.filter(session=session, invocation_id__in={target for _, target in rewinds})
        .values("invocation_id").annotate(first=Min("seq")).values_list("invocation_id", "first")
    )
    ranges = [(firsts[target], seq) for seq, target in rewinds if target in firsts]
    for view in views:
        view.rewound = any(start <= view.seq < end for start, end in ranges)


def _name_compacted_ranges(session: Session, views: list[EventView]) -> None:
    """Which stored events (by seq) each compaction summary stands for."""
    for view in views:
        compaction = view.event.actions.compaction
        if compaction is None:
            continue
        covered = Event.objects.filter(
            session=session, timestamp__gte=compaction.start_timestamp, timestamp__lte=compaction.end_timestamp,
            seq__lt=view.seq,
        ).aggregate(first=Min("seq"), last=Max("seq"))
        if covered["first"] is not None:
            view.compacted_range = (covered["first"], covered["last"])


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
        changed = {SCOPE_PREFIXES[c.scope] + c.key for c in selectors.changes_of(session, seq)}
    rows = [
        {"scope": scope, "key": SCOPE_PREFIXES[scope] + key, "value": value, "changed": SCOPE_PREFIXES[scope] + key in changed}
        for scope, values in state.by_scope()
        for key, value in sorted(values.items())
    ]
    return {"state_rows": rows, "state_seq": seq}
