"""ADK service adapters on Django models, for any ADK `Runner`::

    from adkui.adk import DjangoSessionService
    runner = Runner(agent=root_agent, app_name="my_app", session_service=DjangoSessionService())

and `register_schemes()`, which makes `adkui://` a scheme of ADK's service
registry (`adk web --session_service_uri=adkui://`, see `adkui.schemes`).

This module is a face: it defines nothing. Each adapter lives beside the
store it adapts (`sessions_app.session_service`, `memory_app.artifact_service`,
`memory_app.memory_service`); it only translates, ADK calls in and ADK objects
out, and the rules live in those apps. Reading an adapter from here sets
Django up when a plain script has not (the settings module defaults to
`adkui.settings`); importing the module alone does not, so that an `adkui:`
URI can still choose the database first.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bootstrap import ADAPTERS, adapter
from .schemes import register_schemes

if TYPE_CHECKING:
    from memory_app.artifact_service import DjangoArtifactService
    from memory_app.memory_service import DjangoMemoryService
    from sessions_app.session_service import DjangoSessionService

__all__ = ["DjangoArtifactService", "DjangoMemoryService", "DjangoSessionService", "register_schemes"]


def __getattr__(name: str) -> Any:
    if name in ADAPTERS:
        return adapter(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
