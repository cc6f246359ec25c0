from __future__ import annotations

from lazy_imports import lazy_path, views_in

# Named, imported on first use: see lazy_imports.py.
edit_views = views_in("runtime_app.edit_views")
replay_views = views_in("runtime_app.replay_views")
views = views_in("runtime_app.views")

app_name = "runtime"
urlpatterns = [
    lazy_path("", views.app_list, name="app_list"),
    lazy_path("imports/local/", views.local_stores, name="local_stores"),
    lazy_path("imports/local/start/", views.local_import_start, name="local_import_start"),
    lazy_path("imports/local/stop/", views.local_import_stop, name="local_import_stop"),
    # Any stored app name, "/" included (DjangoSessionService takes any string, as ADK's services do).
    lazy_path("apps/<path:app_name>/", views.app_detail, name="app_detail"),
    lazy_path("sessions/<int:pk>/", views.session_detail, name="session_detail"),
    lazy_path("sessions/<int:pk>/chat/", views.chat_send, name="chat_send"),
    lazy_path("sessions/<int:pk>/chat/stop/", views.chat_stop, name="chat_stop"),
    lazy_path("sessions/<int:pk>/rewind/", views.rewind_preview, name="rewind_preview"),
    lazy_path("sessions/<int:pk>/rewind/apply/", views.rewind_apply, name="rewind_apply"),
    lazy_path("sessions/<int:pk>/fork/", views.session_fork, name="session_fork"),
    lazy_path("sessions/<int:pk>/fork/preview/", views.fork_preview, name="fork_preview"),
    lazy_path("sessions/<int:pk>/reset/", views.session_reset, name="session_reset"),
    lazy_path("sessions/<int:pk>/replay/start/", replay_views.replay_start, name="replay_start"),
    lazy_path("sessions/<int:pk>/replay/", replay_views.replay_detail, name="replay_detail"),
    lazy_path("sessions/<int:pk>/replay/stop/", replay_views.replay_stop, name="replay_stop"),
    lazy_path("model-calls/<int:pk>/edit/", edit_views.edit_form, name="edit_form"),
    lazy_path("model-calls/<int:pk>/continue/", edit_views.edit_submit, name="edit_submit"),
    lazy_path("sessions/<int:pk>/edited/", edit_views.edit_comparison, name="edit_comparison"),
]
