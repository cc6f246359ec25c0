"""OTLP/HTTP's own paths (`/v1/traces`, `/v1/logs`), where exporters send by default."""
from __future__ import annotations

from django.urls import path

from . import otlp_apis

app_name = "otlp"
urlpatterns = [
    path("traces", otlp_apis.OtlpTracesApi.as_view(), name="traces"),
    path("logs", otlp_apis.OtlpLogsApi.as_view(), name="logs"),
]
