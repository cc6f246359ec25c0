"""adkui's metric and judge in ADK's own registries, whenever ADK's evaluation runs.

`final_session_state_match` goes into ADK's DEFAULT_METRIC_EVALUATOR_REGISTRY
and `adkui-scripted-judge` into its LLMRegistry, so that every eval sees them:
adkui's engine (the UI's and the API's runs, `manage.py eval`), its metric
pages, and ADK's own evaluation code run in the same process.

`EvalAppConfig.ready()` hooks `register` to the import of ADK's registry
module rather than calling it: that module imports every evaluator ADK
registers, Vertex AI's SDK among them (seconds), which the server, the task
worker and most commands never need to start. Every eval imports it first
(ADK's LocalEvalService does), so the hook runs before any eval reads it.
"""
from __future__ import annotations

from types import ModuleType

from . import judges, state_metric


def register(adk_registry_module: ModuleType) -> None:
    """The post-import hook of ADK's `metric_evaluator_registry` module (idempotent)."""
    state_metric.register(adk_registry_module.DEFAULT_METRIC_EVALUATOR_REGISTRY)
    judges.register()
