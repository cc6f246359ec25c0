"""ADK's debug trace routes under /api/ (its dev server's paths: adk-web calls them)."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver

from lazy_imports import lazy_path, views_in

apis = views_in("inspector_app.apis")  # imported on first use: see lazy_imports.py

app_name = "inspector_api"
_DEBUG = "dev/apps/<str:app_name>/debug/trace"

urlpatterns: list[URLPattern | URLResolver] = [
    lazy_path(f"{_DEBUG}/session/<str:session_id>", apis.SessionTraceApi.as_view(), name="session-trace"),
    lazy_path(f"{_DEBUG}/<str:event_id>", apis.EventTraceApi.as_view(), name="event-trace"),
]
