from __future__ import annotations

from django.urls import path

from . import views

app_name = "inspector_app"
urlpatterns = [
    path("sessions/<int:pk>/events/<int:seq>/", views.event_inspector, name="event_inspector"),
    path("sessions/<int:pk>/totals/", views.session_totals, name="session_totals"),
    path("sessions/<int:pk>/invocations/<path:invocation_id>/", views.invocation_trace, name="invocation_trace"),
    path("model-calls/<int:pk>/", views.model_call, name="model_call"),
    path("tool-calls/<int:pk>/", views.tool_call, name="tool_call"),
]
