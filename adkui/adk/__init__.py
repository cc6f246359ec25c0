"""ADK service adapters on Django models, for any ADK `Runner`::

    from adkui.adk import DjangoSessionService
    runner = Runner(agent=root_agent, app_name="my_app", session_service=DjangoSessionService())

Importing this package sets Django up when a plain script has not (the
settings module defaults to `adkui.settings`). The adapters only translate:
ADK calls come in, ADK objects go out; the rules live in the Django apps.
"""
from __future__ import annotations

import os

import django
from django.apps import apps

if not apps.ready:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
    django.setup()

from .artifacts import DjangoArtifactService  # noqa: E402
from .memory import DjangoMemoryService  # noqa: E402
from .sessions import DjangoSessionService  # noqa: E402

__all__ = ["DjangoArtifactService", "DjangoMemoryService", "DjangoSessionService"]
