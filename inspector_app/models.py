"""What the recorder keeps of each run: agent runs, model calls and tool calls.

Each record is one node of an invocation's trace tree (`span_id`, with
`parent_span_id` pointing at the agent run or model call it happened in) and
carries the session's ADK key beside the foreign key, so records of a session
that is not (or no longer) in our tables can still be found and cleaned up.
Payloads are JSON already cut to `ADKUI_RECORDER_MAX_BYTES` (see `capping`).
"""
from __future__ import annotations

from django.db import models

from sessions_app.models import Session


class RecordQuerySet(models.QuerySet):
    def for_invocation(self, session: Session, invocation_id: str) -> RecordQuerySet:
        return self.filter(session=session, invocation_id=invocation_id).order_by("started_at", "pk")


class Recorded(models.Model):
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, null=True, blank=True, related_name="%(app_label)s_%(class)ss"
    )
    app_name = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    adk_session_id = models.CharField(max_length=255, help_text="ADK's id of the session.")
    invocation_id = models.CharField(max_length=255)
    span_id = models.CharField(max_length=32)
    parent_span_id = models.CharField(max_length=32, blank=True, default="")
    agent_name = models.CharField(max_length=255, blank=True, default="")
    branch = models.TextField(null=True, blank=True)
    started_at = models.FloatField(help_text="Unix time, like an event's timestamp.")
    duration_ms = models.FloatField(null=True, blank=True, help_text="Empty: never finished (the run ended first).")
    error = models.TextField(blank=True, default="")
    truncated = models.BooleanField(default=False, help_text="Payload values were cut to the size cap.")
    original_bytes = models.PositiveIntegerField(default=0, help_text="Payload size before the cap.")

    objects = RecordQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def ended_at(self) -> float | None:
        return None if self.duration_ms is None else self.started_at + self.duration_ms / 1000


class AgentRun(Recorded):
    transferred_from = models.CharField(max_length=255, blank=True, default="")
    # Empty (null) for runs recorded before it was kept; "" is an agent without one.
    description = models.TextField(null=True, blank=True, help_text="The agent's description, as ADK's trace gives it.")

    class Meta:
        indexes = [
            models.Index(fields=["session", "invocation_id"], name="agentrun_invocation"),
            models.Index(fields=["app_name", "user_id", "adk_session_id"], name="agentrun_key"),
        ]

    def __str__(self) -> str:
        return f"agent {self.agent_name}"


class ModelCall(Recorded):
    """One request to the model and its (final) response."""

    event_id = models.CharField(max_length=255, blank=True, default="", help_text="ADK id of the event it produced.")
    model = models.CharField(max_length=255, blank=True, default="")
    request = models.JSONField(default=dict)
    response = models.JSONField(default=dict)
    finish_reason = models.CharField(max_length=64, blank=True, default="")
    error_code = models.CharField(max_length=255, blank=True, default="")
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_tokens = models.PositiveIntegerField(null=True, blank=True)
    thoughts_tokens = models.PositiveIntegerField(null=True, blank=True)
    total_tokens = models.PositiveIntegerField(null=True, blank=True)
    first_chunk_ms = models.FloatField(null=True, blank=True, help_text="Streaming: time to the first fragment.")

    class Meta:
        indexes = [
            models.Index(fields=["session", "invocation_id"], name="modelcall_invocation"),
            models.Index(fields=["session", "event_id"], name="modelcall_event"),
            models.Index(fields=["app_name", "user_id", "adk_session_id"], name="modelcall_key"),
        ]

    def __str__(self) -> str:
        return f"model call of {self.agent_name}"

    @property
    def failed(self) -> bool:
        return bool(self.error or self.error_code)


class ToolCall(Recorded):
    tool_name = models.CharField(max_length=255)
    function_call_id = models.CharField(max_length=255, blank=True, default="")
    args = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    event_id = models.CharField(max_length=255, blank=True, default="", help_text="ADK id of its response (or error) event.")
    call_event_id = models.CharField(max_length=255, blank=True, default="", help_text="ADK id of the event that asked for it.")
    # As ADK's trace gives them (null for calls recorded before they were kept).
    tool_type = models.CharField(max_length=255, null=True, blank=True, help_text="The tool's class, e.g. FunctionTool.")
    tool_description = models.TextField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["session", "invocation_id"], name="toolcall_invocation"),
            models.Index(fields=["session", "event_id"], name="toolcall_event"),
            models.Index(fields=["app_name", "user_id", "adk_session_id"], name="toolcall_key"),
        ]

    def __str__(self) -> str:
        return f"tool {self.tool_name}"

    @property
    def failed(self) -> bool:
        """Raised, or returned ADK's error shape (`{"error": ...}` / `{"status": "error"}`)."""
        if self.error:
            return True
        result = self.result
        return isinstance(result, dict) and ("error" in result or result.get("status") == "error")


class TraceSpan(models.Model):
    """One span an agent's OpenTelemetry exporter sent (`otlp`), as sent.

    Kept whole so that spans which arrive before the span that names their
    session (an exporter sends a child as soon as it ends) are placed once it
    comes; `placed` spans have their agent run, model call or tool call record.
    """

    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = models.CharField(max_length=255)
    operation = models.CharField(max_length=64, help_text="gen_ai.operation.name")
    started_at = models.FloatField()
    duration_ms = models.FloatField()
    error = models.TextField(blank=True, default="")
    attributes = models.JSONField(default=dict)
    service_name = models.CharField(max_length=255, blank=True, default="")
    conversation_id = models.CharField(max_length=255, blank=True, default="", help_text="gen_ai.conversation.id")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True, related_name="trace_spans")
    placed = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace_id", "span_id"], name="unique_trace_span")]
        indexes = [
            models.Index(fields=["trace_id", "placed"], name="tracespan_trace"),
            models.Index(fields=["placed", "started_at"], name="tracespan_waiting", condition=models.Q(placed=False)),
        ]

    def __str__(self) -> str:
        return self.name
