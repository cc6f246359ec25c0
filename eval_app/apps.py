from __future__ import annotations

from django.apps import AppConfig


class EvalAppConfig(AppConfig):
    name = "eval_app"
    verbose_name = "ADK evaluations"
    default_auto_field = "django.db.models.BigAutoField"
