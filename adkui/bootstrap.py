"""Setting Django up for code that is not a Django project: ADK's CLI, a script,
a user's own FastAPI app. The database must be chosen before the first model
is imported, so the adapters are imported only once that is done."""
from __future__ import annotations

import importlib
import os
from typing import Any

import dj_database_url
import django
from django.apps import apps
from django.conf import settings

# Each adapter, and the module beside the store it adapts.
ADAPTERS = {
    "DjangoSessionService": "sessions_app.session_service",
    "DjangoArtifactService": "memory_app.artifact_service",
    "DjangoMemoryService": "memory_app.memory_service",
}


class DatabaseConflictError(ValueError):
    """A process was asked for a second database: Django keeps one per process."""


def ensure_setup(database_url: str | None = None) -> None:
    """Set Django up (settings `adkui.settings` unless DJANGO_SETTINGS_MODULE says
    otherwise) on `database_url`, or on the install's own database when None."""
    if apps.ready:
        if database_url and not _same_database(database_url):
            raise DatabaseConflictError(
                f"This process already uses the database {_shown(settings.DATABASES['default'])}; "
                f"it cannot also use {database_url!r}. Name one database per process (DATABASE_URL)."
            )
        return
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
    django.setup()


def adapter(name: str) -> Any:
    """The adapter class `name` (see ADAPTERS), Django set up first."""
    ensure_setup()
    return getattr(importlib.import_module(ADAPTERS[name]), name)


def _same_database(url: str) -> bool:
    wanted, current = dj_database_url.parse(url), settings.DATABASES["default"]
    return all(str(wanted.get(k) or "") == str(current.get(k) or "") for k in ("ENGINE", "NAME", "HOST", "PORT"))


def _shown(config: dict[str, Any]) -> str:
    host = f"{config.get('HOST')}:{config.get('PORT')}/" if config.get("HOST") else ""
    return f"{config['ENGINE'].rsplit('.', 1)[-1]} {host}{config['NAME']}"
