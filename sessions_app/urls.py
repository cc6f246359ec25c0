from __future__ import annotations

from django.urls import path

from . import run_views, views

app_name = "sessions_app"
urlpatterns = [
    path("", views.app_list, name="app_list"),
    path("apps/<str:app_name>/", views.app_detail, name="app_detail"),
    path("sessions/<int:pk>/", views.session_detail, name="session_detail"),
    path("sessions/<int:pk>/events/", views.session_events, name="session_events"),
    path("sessions/<int:pk>/state/", views.session_state, name="session_state"),
    path("sessions/<int:pk>/key-history/", views.key_history, name="key_history"),
    path("sessions/<int:pk>/delete/", views.session_delete, name="session_delete"),
    path("sessions/<int:pk>/chat/", run_views.chat_send, name="chat_send"),
    path("sessions/<int:pk>/chat/stop/", run_views.chat_stop, name="chat_stop"),
    path("sessions/<int:pk>/rewind/", run_views.rewind_preview, name="rewind_preview"),
    path("sessions/<int:pk>/rewind/apply/", run_views.rewind_apply, name="rewind_apply"),
    path("sessions/<int:pk>/fork/", run_views.session_fork, name="session_fork"),
    path("sessions/<int:pk>/reset/", run_views.session_reset, name="session_reset"),
]
