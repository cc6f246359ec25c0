"""Writes: one insert per agent run, model call and tool call, called by the recorder.

Payloads are cut to `ADKUI_RECORDER_MAX_BYTES` (JSON bytes) per record here,
so every path that stores a record obeys the cap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from sessions_app.keys import SessionKey
from sessions_app.models import Event, Session

from .capping import cap
from .models import AgentRun, ModelCall, ToolCall

MAX_ERROR_CHARS = 4000


def recorder_enabled() -> bool:
    return bool(getattr(settings, "ADKUI_RECORDER_ENABLED", True))


def max_bytes() -> int:
    return int(getattr(settings, "ADKUI_RECORDER_MAX_BYTES", 64_000))


@dataclass(frozen=True)
class Span:
    """Where a record sits: its session, invocation, agent and place in the trace tree."""

    key: SessionKey
    session_pk: int | None
    invocation_id: str
    span_id: str
    parent_span_id: str
    agent_name: str
    branch: str | None
    started_at: float
    duration_ms: float | None
    error: str = ""

    def columns(self) -> dict[str, Any]:
        return {
            "session_id": self.session_pk,
            "app_name": self.key.app_name,
            "user_id": self.key.user_id,
            "adk_session_id": self.key.session_id,
            "invocation_id": self.invocation_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "agent_name": self.agent_name,
            "branch": self.branch,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "error": self.error[:MAX_ERROR_CHARS],
        }


def agent_run_record(*, span: Span, transferred_from: str = "", description: str | None = None) -> AgentRun:
    return AgentRun.objects.create(**span.columns(), transferred_from=transferred_from, description=description)


def model_call_record(
    *, span: Span, event_id: str, request: dict[str, Any], response: dict[str, Any], first_chunk_ms: float | None = None
) -> ModelCall:
    capped = cap({"request": request, "response": response}, max_bytes())
    payload = capped.value if "request" in capped.value else {"request": capped.value, "response": {}}
    usage = response.get("usage_metadata") or {}
    return ModelCall.objects.create(
        **span.columns(),
        event_id=event_id,
        model=str(request.get("model") or response.get("model_version") or "")[:255],
        request=payload["request"],
        response=payload["response"],
        finish_reason=str(response.get("finish_reason") or "")[:64],
        error_code=str(response.get("error_code") or "")[:255],
        prompt_tokens=usage.get("prompt_token_count"),
        output_tokens=usage.get("candidates_token_count"),
        cached_tokens=usage.get("cached_content_token_count"),
        thoughts_tokens=usage.get("thoughts_token_count"),
        total_tokens=usage.get("total_token_count"),
        first_chunk_ms=first_chunk_ms,
        truncated=capped.truncated,
        original_bytes=capped.original_bytes,
    )


def tool_call_record(
    *, span: Span, tool_name: str, function_call_id: str, args: Any, result: Any,
    event_id: str = "", call_event_id: str = "", tool_type: str | None = None, tool_description: str | None = None,
) -> ToolCall:
    capped = cap({"args": args, "result": result}, max_bytes())
    payload = capped.value if "args" in capped.value else {"args": capped.value, "result": None}
    return ToolCall.objects.create(
        **span.columns(),
        tool_name=tool_name[:255],
        function_call_id=function_call_id,
        args=payload["args"],
        result=payload["result"],
        event_id=event_id,
        call_event_id=call_event_id,
        tool_type=None if tool_type is None else tool_type[:255],
        tool_description=tool_description,
        truncated=capped.truncated,
        original_bytes=capped.original_bytes,
    )


@transaction.atomic
def recordings_delete(*, key: SessionKey) -> int:
    """Every record of one ADK session, stored in our tables or not (the FK cascade
    covers sessions we store; this covers the rest)."""
    where = {"app_name": key.app_name, "user_id": key.user_id, "adk_session_id": key.session_id}
    return sum(model.objects.filter(**where).delete()[0] for model in (AgentRun, ModelCall, ToolCall))


@transaction.atomic
def recordings_copy(*, source: Session, fork: Session, upto_seq: int) -> int:
    """The records of what a fork copied: the model and tool calls and agent runs
    behind events #1..#upto_seq of `source`, now also the fork's (a fork's events
    are the source's, so its inspector, trace and token totals are too).

    Every record of an invocation copied whole is copied. Of an invocation the
    fork cuts, a model or tool call is copied when the event it produced is
    (ADK makes an event before the call that fills it, so times cannot tell),
    and an agent run when it started before the first event left out."""
    copied = Event.objects.filter(session=source, seq__gte=1, seq__lte=upto_seq)
    ids = set(copied.values_list("event_id", flat=True))
    invocations = set(copied.values_list("invocation_id", flat=True))
    following = Event.objects.filter(session=source, seq=upto_seq + 1).first()
    cut = following if following is not None and following.invocation_id in invocations else None
    moved = {"session_id": fork.pk, "app_name": fork.app.name, "user_id": fork.user_id, "adk_session_id": fork.session_id}
    total = 0
    for model in (AgentRun, ModelCall, ToolCall):
        rows = model.objects.filter(session=source, invocation_id__in=invocations).order_by("pk")
        copies = [model(**{**_fields(row), **moved}) for row in rows.iterator()
                  if cut is None or row.invocation_id != cut.invocation_id or _before(row, cut, ids)]
        total += len(model.objects.bulk_create(copies))
    return total


def _before(row: AgentRun | ModelCall | ToolCall, cut: Event, copied_ids: set[str]) -> bool:
    if isinstance(row, AgentRun):
        return row.started_at < cut.timestamp
    return row.event_id in copied_ids


def _fields(row: Any) -> dict[str, Any]:
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields if not f.primary_key}
