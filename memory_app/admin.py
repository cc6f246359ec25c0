from __future__ import annotations

from django.contrib import admin

from .models import Artifact, ArtifactVersion, MemoryEvent, SessionMemory


class ArtifactVersionInline(admin.TabularInline):
    model = ArtifactVersion
    extra = 0
    fields = ["version", "kind", "mime_type", "size", "payload", "create_time"]
    readonly_fields = fields


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["filename", "app_name", "user_id", "session_id"]
    list_filter = ["app_name"]
    search_fields = ["filename", "user_id", "session_id"]
    inlines = [ArtifactVersionInline]


@admin.register(MemoryEvent)
class MemoryEventAdmin(admin.ModelAdmin):
    list_display = ["event_id", "app_name", "user_id", "session_id", "author", "forgotten"]
    list_filter = ["app_name", "forgotten"]
    search_fields = ["search_text", "user_id", "session_id"]
    raw_id_fields = ["source_session"]


@admin.register(SessionMemory)
class SessionMemoryAdmin(admin.ModelAdmin):
    list_display = ["session", "revision", "event_count", "reason", "offloaded_at"]
    raw_id_fields = ["session"]
