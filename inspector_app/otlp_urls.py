"""OTLP/HTTP's own paths (`/v1/traces`, `/v1/logs`), where exporters send by default."""
from __future__ import annotations

from lazy_imports import lazy_path, views_in

otlp_apis = views_in("inspector_app.otlp_apis")  # imported on first use: see lazy_imports.py

app_name = "otlp"
urlpatterns = [
    lazy_path("traces", otlp_apis.OtlpTracesApi.as_view(), name="traces"),
    lazy_path("logs", otlp_apis.OtlpLogsApi.as_view(), name="logs"),
]
