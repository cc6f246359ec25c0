"""Runners for the agents of the agents folder, on adkui's own services."""
from __future__ import annotations

from typing import Any

from google.adk.runners import Runner

from inspector_app.plugin import app_with_recorder
from memory_app.artifact_service import DjangoArtifactService
from memory_app.memory_service import DjangoMemoryService
from sessions_app.session_service import DjangoSessionService

from .agents import load


def make_runner(name: str, **services: Any) -> Runner:
    """A Runner for agent `name` on our services (unless others are given).

    Every run adkui starts records what its model calls saw (inspector_app).
    Raises AgentNotFound, or RuntimeError carrying the load traceback.
    """
    loaded = load(name)
    if not loaded.ok:
        raise RuntimeError(f"Agent {name!r} failed to load:\n{loaded.error}")
    services.setdefault("session_service", DjangoSessionService())
    services.setdefault("artifact_service", DjangoArtifactService())
    services.setdefault("memory_service", DjangoMemoryService())
    return Runner(app=app_with_recorder(loaded.root, app_name=name), app_name=name, **services)
