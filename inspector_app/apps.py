from __future__ import annotations

from django.apps import AppConfig


class InspectorAppConfig(AppConfig):
    name = "inspector_app"
    verbose_name = "Model call inspector"
    default_auto_field = "django.db.models.BigAutoField"
