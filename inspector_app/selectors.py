"""Reads: the records of an event, an invocation or a session, and their totals."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, ExpressionWrapper, F, FloatField, Max, Min, Q, Sum

from sessions_app.models import Event, Session
from sessions_app.keys import SessionKey

from .models import AgentRun, ModelCall, ToolCall

HEAVY_MODEL_FIELDS = ("request", "response")


def session_pk_for(key: SessionKey) -> int | None:
    return Session.objects.for_key(**key.__dict__).values_list("pk", flat=True).first()


@dataclass
class EventRecords:
    model_calls: list[ModelCall]
    tool_calls: list[ToolCall]  # tools whose response (or error) is this event
    asked_tools: list[ToolCall]  # tools this event's function calls asked for

    @property
    def empty(self) -> bool:
        return not (self.model_calls or self.tool_calls or self.asked_tools)


def event_records(session: Session, event: Event) -> EventRecords:
    tools = ToolCall.objects.filter(session=session).order_by("started_at", "pk")
    return EventRecords(
        model_calls=list(ModelCall.objects.filter(session=session, event_id=event.event_id).order_by("started_at", "pk")),
        tool_calls=list(tools.filter(event_id=event.event_id)),
        asked_tools=list(tools.filter(call_event_id=event.event_id).exclude(event_id=event.event_id)),
    )


def previous_model_call(call: ModelCall) -> ModelCall | None:
    """The model call of the same invocation just before this one (any agent)."""
    earlier = ModelCall.objects.filter(
        Q(started_at__lt=call.started_at) | Q(started_at=call.started_at, pk__lt=call.pk),
        session_id=call.session_id, invocation_id=call.invocation_id,
        app_name=call.app_name, user_id=call.user_id, adk_session_id=call.adk_session_id,
    )
    return earlier.order_by("-started_at", "-pk").first()


def event_seqs(session: Session, event_ids: set[str]) -> dict[str, int]:
    event_ids.discard("")
    if not event_ids:
        return {}
    return dict(Event.objects.filter(session=session, event_id__in=event_ids).values_list("event_id", "seq"))


def invocation_records(session: Session, invocation_id: str) -> tuple[list[AgentRun], list[ModelCall], list[ToolCall]]:
    """Everything recorded for one invocation, payloads left out (the trace needs none)."""
    return (
        list(AgentRun.objects.for_invocation(session, invocation_id)),
        list(ModelCall.objects.for_invocation(session, invocation_id).defer(*HEAVY_MODEL_FIELDS)),
        list(ToolCall.objects.for_invocation(session, invocation_id).defer("args")),
    )


@dataclass
class Totals:
    invocation_id: str = ""
    started_at: float | None = None
    ended_at: float | None = None
    model_calls: int = 0
    model_errors: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    total_tokens: int = 0
    model_ms: float = 0.0
    tool_calls: int = 0
    tool_errors: int = 0
    invocations: list[Totals] = field(default_factory=list)  # a session's newest, oldest first
    invocation_count: int = 0  # a session's invocations, all of them
    wall_ms_sum: float = 0.0

    @property
    def wall_ms(self) -> float | None:
        """Invocation: first start to last end. Session: the invocations' sum."""
        if self.invocation_count:
            return self.wall_ms_sum
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at) * 1000

    @property
    def recorded(self) -> bool:
        return bool(self.model_calls or self.tool_calls or self.invocation_count)


_END = ExpressionWrapper(F("started_at") + F("duration_ms") / 1000.0, output_field=FloatField())


def invocation_totals(session: Session, invocation_ids: list[str] | None = None) -> list[Totals]:
    """Token and latency totals of each recorded invocation (of those in `invocation_ids` only,
    when given), oldest first. Three grouped queries."""
    by_id: dict[str, Totals] = {}

    def totals(invocation_id: str) -> Totals:
        return by_id.setdefault(invocation_id, Totals(invocation_id=invocation_id))

    for row in _grouped(ModelCall, session, invocation_ids, **_MODEL_SUMS):
        t = totals(row["invocation_id"])
        _model_sums(t, row)
        _widen(t, row)
    for row in _grouped(ToolCall, session, invocation_ids, **_TOOL_SUMS):
        t = totals(row["invocation_id"])
        t.tool_calls, t.tool_errors = row["calls"], row["errors"]
        _widen(t, row)
    for row in _grouped(AgentRun, session, invocation_ids):
        _widen(totals(row["invocation_id"]), row)
    return sorted(by_id.values(), key=lambda t: (t.started_at or 0.0, t.invocation_id))


_MODEL_SUMS = {
    "calls": Count("pk"), "errors": Count("pk", filter=~Q(error="") | ~Q(error_code="")),
    "prompt": Sum("prompt_tokens"), "output": Sum("output_tokens"), "cached": Sum("cached_tokens"),
    "total": Sum("total_tokens"), "ms": Sum("duration_ms"),
}
_TOOL_SUMS = {"calls": Count("pk"), "errors": Count("pk", filter=~Q(error="") | Q(result__has_key="error") | Q(result__status="error"))}


def _model_sums(t: Totals, row: dict) -> None:
    t.model_calls, t.model_errors, t.model_ms = row["calls"], row["errors"], row["ms"] or 0.0
    t.prompt_tokens, t.output_tokens = row["prompt"] or 0, row["output"] or 0
    t.cached_tokens, t.total_tokens = row["cached"] or 0, row["total"] or 0


def session_totals(session: Session, *, recent: int = 20) -> Totals:
    """The session's totals, and those of its `recent` newest invocations. A fixed number of
    queries whatever the session's length: no invocation but the shown ones is read into Python."""
    total = Totals()
    _model_sums(total, ModelCall.objects.filter(session=session).aggregate(**_MODEL_SUMS))
    tools = ToolCall.objects.filter(session=session).aggregate(**_TOOL_SUMS)
    total.tool_calls, total.tool_errors = tools["calls"], tools["errors"]
    total.invocation_count, total.wall_ms_sum, newest = _invocation_spans(session, recent)
    total.invocations = invocation_totals(session, newest) if newest else []
    return total


def _invocation_spans(session: Session, newest: int) -> tuple[int, float, list[str]]:
    """How many invocations the session's records name, the sum of each one's first start to
    last end (ms), and the ids of the `newest` that started last."""
    parts = [
        model.objects.filter(session=session).annotate(ended=_END).values_list("invocation_id", "started_at", "ended")
        .order_by().query.sql_with_params()
        for model in (ModelCall, ToolCall, AgentRun)
    ]
    spans = " UNION ALL ".join(sql for sql, _ in parts)
    params = [p for _, part_params in parts for p in part_params]
    grouped = (f"SELECT invocation_id, MIN(started_at) AS first, MAX(ended) AS last FROM ({spans}) AS spans"
               " GROUP BY invocation_id")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), SUM((last - first) * 1000) FROM ({grouped}) AS invocations", params)
        count, wall = cursor.fetchone()
        cursor.execute(f"SELECT invocation_id FROM ({grouped}) AS invocations"
                       " ORDER BY COALESCE(first, 0) DESC, invocation_id DESC LIMIT %s", [*params, newest])
        ids = [row[0] for row in cursor.fetchall()]
    return count, wall or 0.0, ids


def _grouped(model: type, session: Session, invocation_ids: list[str] | None, **aggregates) -> list[dict]:
    rows = model.objects.filter(session=session)
    if invocation_ids is not None:
        rows = rows.filter(invocation_id__in=invocation_ids)
    return list(rows.values("invocation_id").annotate(first=Min("started_at"), last=Max(_END), **aggregates).order_by())


def _widen(totals: Totals, row: dict) -> None:
    if row["first"] is not None:
        totals.started_at = row["first"] if totals.started_at is None else min(totals.started_at, row["first"])
    if row["last"] is not None:
        totals.ended_at = row["last"] if totals.ended_at is None else max(totals.ended_at, row["last"])


# ---- adk-web's trace view (ADK's /dev/apps/{app}/debug/trace routes) --------------------------------


def session_recordings(*, app_name: str, session_id: str) -> tuple[list[AgentRun], list[ModelCall], list[ToolCall]]:
    """Every record of the ADK session `session_id` of `app_name`, oldest first, payloads
    included. Any user's: ADK's own trace store knows a session by its id alone."""
    where = {"app_name": app_name, "adk_session_id": session_id}
    return (
        list(AgentRun.objects.filter(**where).order_by("started_at", "pk")),
        list(ModelCall.objects.filter(**where).order_by("started_at", "pk")),
        list(ToolCall.objects.filter(**where).order_by("started_at", "pk")),
    )


def event_recording(*, app_name: str, event_id: str) -> ModelCall | ToolCall | None:
    """The model call that produced event `event_id`, else the tool call it answers."""
    if not event_id:
        return None
    model_call = ModelCall.objects.filter(app_name=app_name, event_id=event_id).order_by("-started_at", "-pk").first()
    if model_call is not None:
        return model_call
    return ToolCall.objects.filter(app_name=app_name, event_id=event_id).order_by("-started_at", "-pk").first()
