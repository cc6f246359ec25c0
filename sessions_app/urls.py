from __future__ import annotations

from django.urls import path

from . import views

app_name = "sessions_app"
urlpatterns = [
    path("sessions/<int:pk>/events/", views.session_events, name="session_events"),
    path("sessions/<int:pk>/state/", views.session_state, name="session_state"),
    path("sessions/<int:pk>/key-history/", views.key_history, name="key_history"),
    path("sessions/<int:pk>/delete/", views.session_delete, name="session_delete"),
    # Any stored app name, "/" included, as on the app page (adkui/urls.py puts this before that page).
    path("apps/<path:app_name>/search/", views.event_search, name="event_search"),
]
