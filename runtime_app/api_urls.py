"""`/api/` routes that need the agent (ADK's paths, no trailing slash), ADK's version, health and
telemetry routes, and the API's schema and docs."""
from __future__ import annotations

from lazy_imports import lazy_path, views_in
from sessions_app.api_urls import SESSION

# Named, imported on first use: see lazy_imports.py (drf-spectacular's views import
# the API's schema class, hence every API of sessions_app).
apis = views_in("runtime_app.apis")
spectacular = views_in("drf_spectacular.views")
edit_apis = views_in("runtime_app.edit_apis")

app_name = "runtime_api"
DEV_APP = "dev/apps/<str:app_name>"
urlpatterns = [
    lazy_path("list-apps", apis.AppListApi.as_view(), name="app-list"),
    lazy_path("run", apis.RunApi.as_view(), name="run"),
    lazy_path("run_sse", apis.RunSseApi.as_view(), name="run-sse"),
    lazy_path("version", apis.VersionApi.as_view(), name="version"),
    lazy_path("health", apis.HealthApi.as_view(), name="health"),
    lazy_path("config/telemetry", apis.TelemetryApi.as_view(), name="telemetry"),
    lazy_path("apps/<str:app_name>/app-info", apis.AppInfoApi.as_view(), name="app-info"),
    lazy_path(DEV_APP + "/build_graph", apis.BuildGraphApi.as_view(), name="build-graph"),
    lazy_path(DEV_APP + "/build_graph_image", apis.BuildGraphImageApi.as_view(), name="build-graph-image"),
    lazy_path(DEV_APP + "/graph", apis.GraphApi.as_view(), name="graph"),
    lazy_path(DEV_APP + "/users/<str:user_id>/sessions/<str:session_id>/events/<str:event_id>/graph",
         apis.EventGraphApi.as_view(), name="event-graph"),
    # ADK's agent builder and deploy routes, answered as ADK answers when they are off:
    lazy_path(DEV_APP + "/builder", apis.AgentEditingOffReadApi.as_view(), name="builder"),
    lazy_path(DEV_APP + "/builder/save", apis.AgentEditingOffWriteApi.as_view(), name="builder-save"),
    lazy_path(DEV_APP + "/builder/cancel", apis.AgentEditingOffWriteApi.as_view(), name="builder-cancel"),
    lazy_path(DEV_APP + "/deploy/defaults", apis.AgentEditingOffReadApi.as_view(), name="deploy-defaults"),
    lazy_path(DEV_APP + "/deploy/<str:target>", apis.AgentEditingOffWriteApi.as_view(), name="deploy"),
    # Not in ADK's server:
    lazy_path(SESSION + "/stop", apis.RunStopApi.as_view(), name="session-stop"),
    lazy_path("dev/model-calls/<int:pk>/continue", edit_apis.ModelCallContinueApi.as_view(), name="model-call-continue"),
    lazy_path("dev/" + SESSION + "/model-calls", edit_apis.ModelCallListApi.as_view(), name="model-call-list"),
    lazy_path("schema/", spectacular.SpectacularAPIView.as_view(), name="schema"),
    lazy_path("docs/", apis.ApiDocsView.as_view(url_name="runtime_api:schema"), name="docs"),
]
