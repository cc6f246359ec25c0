from __future__ import annotations

from django.urls import path

from . import views

app_name = "sessions_app"
urlpatterns = [
    path("sessions/<int:pk>/events/", views.session_events, name="session_events"),
    path("sessions/<int:pk>/state/", views.session_state, name="session_state"),
    path("sessions/<int:pk>/key-history/", views.key_history, name="key_history"),
    path("sessions/<int:pk>/delete/", views.session_delete, name="session_delete"),
]
