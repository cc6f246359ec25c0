"""Pages and panels under /memory/; every view takes the stored session's pk."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import views

app_name = "memory_app"
urlpatterns: list[URLPattern | URLResolver] = [
    path("sessions/<int:pk>/artifacts/", views.artifacts_panel, name="artifacts_panel"),
    path("sessions/<int:pk>/artifacts/upload/", views.artifact_upload, name="artifact_upload"),
    path("sessions/<int:pk>/artifacts/delete/", views.artifact_delete, name="artifact_delete"),
    path("sessions/<int:pk>/artifacts/download/", views.artifact_download, name="artifact_download"),
    path("sessions/<int:pk>/memory/", views.memory_panel, name="memory_panel"),
    path("sessions/<int:pk>/memory/add/", views.memory_add_session, name="memory_add_session"),
    path("sessions/<int:pk>/memory/forget/", views.memory_forget, name="memory_forget"),
    path("sessions/<int:pk>/conversation/", views.conversation_page, name="conversation"),
]
