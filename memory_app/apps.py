from __future__ import annotations

from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "ADK artifacts and memory"
    default_auto_field = "django.db.models.BigAutoField"
