"""ADK service adapters on Django models, for any ADK `Runner`::

    from adkui.adk import DjangoSessionService
    runner = Runner(agent=root_agent, app_name="my_app", session_service=DjangoSessionService())

Importing this package sets Django up when a plain script has not (the
settings module defaults to `adkui.settings`). This module is a face: it
defines nothing. Each adapter lives beside the store it adapts
(`sessions_app.session_service`, `memory_app.artifact_service`,
`memory_app.memory_service`); it only translates, ADK calls in and ADK
objects out, and the rules live in those apps.
"""
from __future__ import annotations

import os

import django
from django.apps import apps

if not apps.ready:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
    django.setup()

from memory_app.artifact_service import DjangoArtifactService  # noqa: E402
from memory_app.memory_service import DjangoMemoryService  # noqa: E402
from sessions_app.session_service import DjangoSessionService  # noqa: E402

__all__ = ["DjangoArtifactService", "DjangoMemoryService", "DjangoSessionService"]
