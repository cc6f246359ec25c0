from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("sessions_app.api_urls")),
    path("api/", include("memory_app.api_urls")),
    path("api/", include("eval_app.api_urls")),
    path("evals/", include("eval_app.urls")),
    path("memory/", include("memory_app.urls")),
    path("", include("sessions_app.urls")),
]
