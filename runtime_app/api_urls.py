"""`/api/` routes that run agents (ADK's paths, no trailing slash), and the API's schema and docs."""
from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from sessions_app.api_urls import SESSION

from . import apis

app_name = "runtime_api"
urlpatterns = [
    path("list-apps", apis.AppListApi.as_view(), name="app-list"),
    path("run", apis.RunApi.as_view(), name="run"),
    path("run_sse", apis.RunSseApi.as_view(), name="run-sse"),
    # Not in ADK's server:
    path(SESSION + "/stop", apis.RunStopApi.as_view(), name="session-stop"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", apis.ApiDocsView.as_view(url_name="runtime_api:schema"), name="docs"),
]
