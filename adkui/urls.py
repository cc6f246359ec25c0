from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("runtime_app.api_urls")),
    path("api/", include("sessions_app.api_urls")),
    path("api/", include("memory_app.api_urls")),
    path("api/", include("eval_app.api_urls")),
    path("evals/", include("eval_app.urls")),
    path("memory/", include("memory_app.urls")),
    path("inspect/", include("inspector_app.urls")),
    path("", include("runtime_app.urls")),
    path("", include("sessions_app.urls")),
]
