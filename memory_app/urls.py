"""Pages and panels under /memory/; every view takes the stored session's pk."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver

from lazy_imports import lazy_path, views_in

views = views_in("memory_app.views")  # imported on first use: see lazy_imports.py

app_name = "memory_app"
urlpatterns: list[URLPattern | URLResolver] = [
    lazy_path("sessions/<int:pk>/artifacts/", views.artifacts_panel, name="artifacts_panel"),
    lazy_path("sessions/<int:pk>/artifacts/upload/", views.artifact_upload, name="artifact_upload"),
    lazy_path("sessions/<int:pk>/artifacts/delete/", views.artifact_delete, name="artifact_delete"),
    lazy_path("sessions/<int:pk>/artifacts/download/", views.artifact_download, name="artifact_download"),
    lazy_path("sessions/<int:pk>/memory/", views.memory_panel, name="memory_panel"),
    lazy_path("sessions/<int:pk>/memory/add/", views.memory_add_session, name="memory_add_session"),
    lazy_path("sessions/<int:pk>/memory/forget/", views.memory_forget, name="memory_forget"),
    lazy_path("sessions/<int:pk>/conversation/", views.conversation_page, name="conversation"),
]
