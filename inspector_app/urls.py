from __future__ import annotations

from lazy_imports import lazy_path, views_in

views = views_in("inspector_app.views")  # imported on first use: see lazy_imports.py

app_name = "inspector_app"
urlpatterns = [
    lazy_path("sessions/<int:pk>/events/<int:seq>/", views.event_inspector, name="event_inspector"),
    lazy_path("sessions/<int:pk>/totals/", views.session_totals, name="session_totals"),
    lazy_path("sessions/<int:pk>/invocations/<path:invocation_id>/", views.invocation_trace, name="invocation_trace"),
    lazy_path("model-calls/<int:pk>/", views.model_call, name="model_call"),
    lazy_path("tool-calls/<int:pk>/", views.tool_call, name="tool_call"),
]
