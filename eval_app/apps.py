from __future__ import annotations

from django.apps import AppConfig

from . import judges
from . import state_metric


class EvalAppConfig(AppConfig):
    name = "eval_app"
    verbose_name = "ADK evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        state_metric.register()  # final_session_state_match, in ADK's own metric registry
        judges.register()  # adkui-scripted-judge, in ADK's own LLMRegistry
