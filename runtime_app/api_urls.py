"""`/api/` routes that need the agent (ADK's paths, no trailing slash), ADK's version, health and
telemetry routes, and the API's schema and docs."""
from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from sessions_app.api_urls import SESSION

from . import apis, edit_apis

app_name = "runtime_api"
DEV_APP = "dev/apps/<str:app_name>"
urlpatterns = [
    path("list-apps", apis.AppListApi.as_view(), name="app-list"),
    path("run", apis.RunApi.as_view(), name="run"),
    path("run_sse", apis.RunSseApi.as_view(), name="run-sse"),
    path("version", apis.VersionApi.as_view(), name="version"),
    path("health", apis.HealthApi.as_view(), name="health"),
    path("config/telemetry", apis.TelemetryApi.as_view(), name="telemetry"),
    path("apps/<str:app_name>/app-info", apis.AppInfoApi.as_view(), name="app-info"),
    path(DEV_APP + "/build_graph", apis.BuildGraphApi.as_view(), name="build-graph"),
    path(DEV_APP + "/build_graph_image", apis.BuildGraphImageApi.as_view(), name="build-graph-image"),
    path(DEV_APP + "/graph", apis.GraphApi.as_view(), name="graph"),
    path(DEV_APP + "/users/<str:user_id>/sessions/<str:session_id>/events/<str:event_id>/graph",
         apis.EventGraphApi.as_view(), name="event-graph"),
    # ADK's agent builder and deploy routes, answered as ADK answers when they are off:
    path(DEV_APP + "/builder", apis.AgentEditingOffReadApi.as_view(), name="builder"),
    path(DEV_APP + "/builder/save", apis.AgentEditingOffWriteApi.as_view(), name="builder-save"),
    path(DEV_APP + "/builder/cancel", apis.AgentEditingOffWriteApi.as_view(), name="builder-cancel"),
    path(DEV_APP + "/deploy/defaults", apis.AgentEditingOffReadApi.as_view(), name="deploy-defaults"),
    path(DEV_APP + "/deploy/<str:target>", apis.AgentEditingOffWriteApi.as_view(), name="deploy"),
    # Not in ADK's server:
    path(SESSION + "/stop", apis.RunStopApi.as_view(), name="session-stop"),
    path("dev/model-calls/<int:pk>/continue", edit_apis.ModelCallContinueApi.as_view(), name="model-call-continue"),
    path("dev/" + SESSION + "/model-calls", edit_apis.ModelCallListApi.as_view(), name="model-call-list"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", apis.ApiDocsView.as_view(url_name="runtime_api:schema"), name="docs"),
]
