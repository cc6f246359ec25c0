from __future__ import annotations

from django.urls import path

from . import edit_views, replay_views, views

app_name = "runtime"
urlpatterns = [
    path("", views.app_list, name="app_list"),
    path("imports/local/", views.local_stores, name="local_stores"),
    path("imports/local/start/", views.local_import_start, name="local_import_start"),
    path("imports/local/stop/", views.local_import_stop, name="local_import_stop"),
    # Any stored app name, "/" included (DjangoSessionService takes any string, as ADK's services do).
    path("apps/<path:app_name>/", views.app_detail, name="app_detail"),
    path("sessions/<int:pk>/", views.session_detail, name="session_detail"),
    path("sessions/<int:pk>/chat/", views.chat_send, name="chat_send"),
    path("sessions/<int:pk>/chat/stop/", views.chat_stop, name="chat_stop"),
    path("sessions/<int:pk>/rewind/", views.rewind_preview, name="rewind_preview"),
    path("sessions/<int:pk>/rewind/apply/", views.rewind_apply, name="rewind_apply"),
    path("sessions/<int:pk>/fork/", views.session_fork, name="session_fork"),
    path("sessions/<int:pk>/fork/preview/", views.fork_preview, name="fork_preview"),
    path("sessions/<int:pk>/reset/", views.session_reset, name="session_reset"),
    path("sessions/<int:pk>/replay/start/", replay_views.replay_start, name="replay_start"),
    path("sessions/<int:pk>/replay/", replay_views.replay_detail, name="replay_detail"),
    path("sessions/<int:pk>/replay/stop/", replay_views.replay_stop, name="replay_stop"),
    path("model-calls/<int:pk>/edit/", edit_views.edit_form, name="edit_form"),
    path("model-calls/<int:pk>/continue/", edit_views.edit_submit, name="edit_submit"),
    path("sessions/<int:pk>/edited/", edit_views.edit_comparison, name="edit_comparison"),
]
