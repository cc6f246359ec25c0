from __future__ import annotations

from django.urls import path

from . import views

app_name = "sessions_app"
urlpatterns = [
    path("", views.app_list, name="app_list"),
]
