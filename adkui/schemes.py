"""`adkui` as a scheme of ADK's own service registry, so that ADK's tools store into adkui.

An agents folder's `services.py` (ADK loads it) holding::

    from adkui.adk import register_schemes
    register_schemes()

makes `adk web --session_service_uri=adkui:// --artifact_service_uri=adkui://
--memory_service_uri=adkui:// AGENTS_DIR` (and `adk api_server`, and
`get_fast_api_app(session_service_uri="adkui://", ...)`) store sessions,
artifacts and memory where `manage.py up` of this install reads them.

The URIs:
- `adkui://` — this install's database: `DATABASE_URL` if set, else its SQLite file;
- `adkui:` followed by a database URL as `DATABASE_URL` takes it:
  `adkui:sqlite:////abs/path/adkui.sqlite3`, `adkui:postgres://user@host:5432/db`.
"""
from __future__ import annotations

from typing import Any

import dj_database_url
from google.adk.cli.service_registry import get_service_registry

from .bootstrap import adapter, ensure_setup

SCHEME = "adkui"
DATABASE_SCHEMES = ("sqlite:", "postgres:", "postgresql:", "pgsql:")
FORMS = ("adkui:// (this install's database), or adkui: followed by a database URL, e.g. "
         "adkui:sqlite:////path/to/adkui.sqlite3 or adkui:postgres://user@host:5432/db")


class SchemeError(ValueError):
    """A malformed `adkui` URI; the message names it and the forms it may take."""


def register_schemes() -> None:
    """Register `adkui` for sessions, artifacts and memory in ADK's service registry."""
    registry = get_service_registry()
    registry.register_session_service(SCHEME, _factory("DjangoSessionService"))
    registry.register_artifact_service(SCHEME, _factory("DjangoArtifactService"))
    registry.register_memory_service(SCHEME, _factory("DjangoMemoryService"))


def database_url(uri: str) -> str | None:
    """The database URL an `adkui` URI names; None for the install's own."""
    if not isinstance(uri, str) or not uri.startswith(f"{SCHEME}:"):
        raise SchemeError(f"Not an adkui URI: {uri!r}. Use {FORMS}.")
    rest = uri[len(SCHEME) + 1:]
    if rest in ("", "//"):
        return None
    if not rest.startswith(DATABASE_SCHEMES):
        raise SchemeError(f"Malformed adkui URI {uri!r}: use {FORMS}.")
    try:
        config = dj_database_url.parse(rest)
    except ValueError as exc:
        raise SchemeError(f"Malformed adkui URI {uri!r}: {exc}. Use {FORMS}.") from exc
    if not config.get("NAME"):
        raise SchemeError(f"Malformed adkui URI {uri!r}: it names no database. Use {FORMS}.")
    return rest


def _factory(name: str) -> Any:
    def create(uri: str, **kwargs: Any) -> Any:
        # kwargs (ADK passes its agents_dir) mean nothing to adkui's services.
        ensure_setup(database_url(uri))
        return adapter(name)()

    create.__name__ = f"adkui_{name}"
    return create
