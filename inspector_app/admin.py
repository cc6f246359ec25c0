from __future__ import annotations

from django.contrib import admin

from .models import AgentRun, ModelCall, ToolCall

_COMMON = ["invocation_id", "agent_name", "started_at", "duration_ms"]


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):
    list_display = ["agent_name", "invocation_id", "started_at", "duration_ms", "error"]
    search_fields = ["invocation_id", "adk_session_id", "agent_name"]
    raw_id_fields = ["session"]


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = [*_COMMON, "model", "total_tokens", "event_id", "truncated"]
    list_filter = ["truncated", "model"]
    search_fields = ["invocation_id", "adk_session_id", "event_id"]
    raw_id_fields = ["session"]


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    list_display = [*_COMMON, "tool_name", "error", "event_id"]
    search_fields = ["invocation_id", "adk_session_id", "tool_name", "function_call_id"]
    raw_id_fields = ["session"]
