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


def agent_run_record(*, span: Span, transferred_from: str = "") -> AgentRun:
    return AgentRun.objects.create(**span.columns(), transferred_from=transferred_from)


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
    event_id: str = "", call_event_id: str = "",
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
        truncated=capped.truncated,
        original_bytes=capped.original_bytes,
    )


@transaction.atomic
def recordings_delete(*, key: SessionKey) -> int:
    """Every record of one ADK session, stored in our tables or not (the FK cascade
    covers sessions we store; this covers the rest)."""
    where = {"app_name": key.app_name, "user_id": key.user_id, "adk_session_id": key.session_id}
    return sum(model.objects.filter(**where).delete()[0] for model in (AgentRun, ModelCall, ToolCall))
