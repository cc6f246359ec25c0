from __future__ import annotations

from lazy_imports import lazy_path, views_in

views = views_in("sessions_app.views")  # imported on first use: see lazy_imports.py

app_name = "sessions_app"
urlpatterns = [
    lazy_path("sessions/<int:pk>/events/", views.session_events, name="session_events"),
    lazy_path("sessions/<int:pk>/state/", views.session_state, name="session_state"),
    lazy_path("sessions/<int:pk>/key-history/", views.key_history, name="key_history"),
    lazy_path("sessions/<int:pk>/delete/", views.session_delete, name="session_delete"),
    # Any stored app name, "/" included, as on the app page (adkui/urls.py puts this before that page).
    lazy_path("apps/<path:app_name>/search/", views.event_search, name="event_search"),
]
