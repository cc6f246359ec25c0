from __future__ import annotations

import gc
import importlib
import threading
import warnings

import wrapt
from django.apps import AppConfig

# ADK's module of DEFAULT_METRIC_EVALUATOR_REGISTRY, which every eval imports first.
ADK_METRIC_REGISTRY_MODULE = "google.adk.evaluation.metric_evaluator_registry"
# What a worker imports to run a case, in that order: its tasks (and through them our engine), ADK's registry.
ENGINE_MODULES = ("eval_app.tasks", ADK_METRIC_REGISTRY_MODULE)


def warm_engine() -> None:
    """Import ADK's evaluation engine now rather than at its first use, then freeze what it made.

    The registry's import (Vertex AI's SDK, nltk and scipy with it) took 10 s of CPU on a slow
    2-core machine (about 3 on a fast one) and some 300 MB: on first use, the first eval set page
    a fresh server opened waited for it, and a fresh worker's first case too, its run page saying
    "queued" with nothing moving. What it imports lives as long as the process, so it is frozen
    as `adkui/asgi.py` freezes the server's imports: no full collection walks it.
    """
    for name in ENGINE_MODULES:  # our metric and judge join the registry as it loads (ready() below)
        importlib.import_module(name)
    gc.freeze()


_warming = threading.Lock()  # held while a warm_engine_in_background runs


def warm_engine_in_background() -> None:
    """`warm_engine` on a thread of its own, so the process starts as fast as before (nothing
    when one is running already)."""
    if not _warming.acquire(blocking=False):
        return

    def warm() -> None:
        try:
            warm_engine()
        finally:
            _warming.release()

    threading.Thread(target=warm, name="warm-eval-engine", daemon=True).start()


def wait_for_engine() -> None:
    """Return once a background warm of this process has ended (at once when none runs).

    Code about to run an eval calls it first: two threads importing the same modules at once
    can deadlock on an import cycle, which Python breaks by raising in one of them. (The one
    import they may race on is `eval_app.tasks`, the first of ENGINE_MODULES, where one thread
    waits for the other holding no other module's lock: no cycle.)
    """
    with _warming:
        pass


class EvalAppConfig(AppConfig):
    name = "eval_app"
    verbose_name = "ADK evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Our metric and judge join ADK's registries the moment ADK's registry module is imported
        # (see eval_app/adk_registries.py), not now: that module imports Vertex AI's SDK (seconds).
        # The hook is named by path so that starting up imports no ADK either (eval_app.judges does).
        wrapt.register_post_import_hook("eval_app.adk_registries:register", ADK_METRIC_REGISTRY_MODULE)
        # ADK labels most of its evaluation engine experimental, a warning per class per process
        # (LocalEvalService, the registry, each judge evaluator, the user simulator...). adkui is
        # built on that engine by design; whoever runs an eval can do nothing about it. Only those:
        # ADK's own switch (ADK_SUPPRESS_EXPERIMENTAL_FEATURE_WARNINGS) would also hide the
        # experimental features a user's own agent uses, which are theirs to know about.
        warnings.filterwarnings(
            "ignore", message=r"\[EXPERIMENTAL\] ", category=UserWarning,
            module=r"(google\.adk\.evaluation|eval_app)(\.|$)",
        )
