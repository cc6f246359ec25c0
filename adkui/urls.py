from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from access.roles import login_only

from . import errors, health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", login_only(auth_views.LogoutView.as_view()), name="logout"),  # any role, or none
    path("admin/", admin.site.urls),
    path("v1/", include("inspector_app.otlp_urls")),  # OTLP/HTTP: agents' OpenTelemetry exporters
    path("api/", include("runtime_app.api_urls")),
    path("api/", include("sessions_app.api_urls")),
    path("api/", include("memory_app.api_urls")),
    path("api/", include("eval_app.api_urls")),
    path("api/", include("inspector_app.api_urls")),
    re_path(r"^api/(?P<rest>.*)$", errors.api_route_not_found),
    path("evals/", include("eval_app.urls")),
    path("memory/", include("memory_app.urls")),
    path("inspect/", include("inspector_app.urls")),
    path("dev-ui/", include("runtime_app.dev_ui")),  # Google's adk-web, on our /api
    # sessions_app first: its /apps/<app>/search/ would otherwise be read as the page of an app "<app>/search".
    path("", include("sessions_app.urls")),
    path("", include("runtime_app.urls")),
]

# JSON under /api/ for routes no view answers, as DRF answers for the ones it does.
handler400 = "adkui.errors.bad_request"
handler403 = "adkui.errors.permission_denied"
handler404 = "adkui.errors.not_found"
handler500 = "adkui.errors.server_error"
