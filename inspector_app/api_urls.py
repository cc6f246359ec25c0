"""ADK's debug trace routes under /api/ (its dev server's paths: adk-web calls them)."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import apis

app_name = "inspector_api"
_DEBUG = "dev/apps/<str:app_name>/debug/trace"

urlpatterns: list[URLPattern | URLResolver] = [
    path(f"{_DEBUG}/session/<str:session_id>", apis.SessionTraceApi.as_view(), name="session-trace"),
    path(f"{_DEBUG}/<str:event_id>", apis.EventTraceApi.as_view(), name="event-trace"),
]
