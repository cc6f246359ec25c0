from __future__ import annotations

from django.contrib import admin

from .models import App, AppState, Event, Session, StateChange, UserState


@admin.register(App)
class AppAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(AppState)
class AppStateAdmin(admin.ModelAdmin):
    list_display = ["app", "update_time"]


@admin.register(UserState)
class UserStateAdmin(admin.ModelAdmin):
    list_display = ["app", "user_id", "update_time"]
    list_filter = ["app"]
    search_fields = ["user_id"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["session_id", "app", "user_id", "revision", "update_time"]
    list_filter = ["app"]
    search_fields = ["session_id", "user_id"]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["session", "seq", "author", "invocation_id", "is_final_response", "error_code"]
    list_filter = ["author", "has_function_call", "has_function_response", "is_final_response"]
    search_fields = ["event_id", "invocation_id"]
    raw_id_fields = ["session"]
    list_select_related = ["session"]


@admin.register(StateChange)
class StateChangeAdmin(admin.ModelAdmin):
    list_display = ["key", "scope", "app", "user_id", "session", "seq", "existed_before"]
    list_filter = ["scope", "app"]
    search_fields = ["key", "user_id"]
    raw_id_fields = ["session", "event"]
