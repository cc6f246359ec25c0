"""Import sessions (and artifacts) from ADK's own stores: what `adk web` leaves
in `<agent>/.adk/`, a `SqliteSessionService` file, a `DatabaseSessionService` URL.

The source is read only through ADK's service classes (list_sessions,
get_session; the artifact service's list/load), one session at a time, and
every event is stored through `event_append`. A session's initial state is the
part of the source's final state that its events' deltas do not explain.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from django.db import transaction
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.artifacts.file_artifact_service import FileArtifactService
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.session import Session as AdkSession
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url

from memory_app.artifact_service import DjangoArtifactService
from sessions_app import selectors
from sessions_app.keys import SessionKey
from sessions_app.models import Session
from sessions_app.scopes import json_safe_state
from sessions_app.services import event_append, session_create, session_state_correct

from .import_summary import ImportSourceError, ImportSummary

__all__ = ["ImportSourceError", "ImportSummary", "import_source", "open_source"]

T = TypeVar("T")
Progress = Callable[[int, int, str], None]
_MISSING = object()
URL_SCHEMES = ("sqlite", "sqlite+aiosqlite", "postgresql", "postgresql+asyncpg", "postgresql+psycopg")


@dataclass
class Store:
    """One app's sessions (and artifacts, for `adk web`'s local folders) in the source."""

    app_name: str
    sessions: BaseSessionService
    artifacts: BaseArtifactService | None = None


class SourceReader:
    """The opened source: its ADK services, driven on one event loop of our own
    (a SQLAlchemy engine is bound to the loop it was first used on), so the
    Django writes stay plain synchronous code on the caller's thread."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.stores: list[Store] = []
        self._loop = asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        for store in self.stores:
            close = getattr(store.sessions, "close", None)
            if close is not None:
                self.run(close())
        self._loop.close()


# ---- opening a SOURCE ----------------------------------------------------------


def open_source(source: str, *, app: str | None = None) -> SourceReader:
    """Detect what SOURCE is and open it read-only; raise ImportSourceError naming it."""
    if "://" in source or source.startswith(("sqlite:", "postgresql")):
        reader = SourceReader(_redacted(source))
        reader.stores = _url_stores(reader, source, app)
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise ImportSourceError(f"{source}: no such file or folder.")
        reader = SourceReader(str(path.resolve()))
        reader.stores = _folder_stores(path, app) if path.is_dir() else [_file_store(path, app)]
    try:
        for store in reader.stores:  # opens each store once, so a bad one fails before any write
            reader.run(store.sessions.list_sessions(app_name=store.app_name, user_id="adkui-import-probe"))
    except Exception as exc:
        reader.close()
        raise ImportSourceError(f"{source}: not a readable ADK session store ({exc}).") from exc
    return reader


def _redacted(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def _readonly_sqlite(path: Path) -> SqliteSessionService:
    # mode=ro: ADK's service creates its tables on first use; a file that is
    # not an ADK store must fail instead of being written to.
    try:
        return SqliteSessionService(f"sqlite:///{path.resolve()}?mode=ro")
    except RuntimeError as exc:  # an old schema ADK asks to migrate first
        raise ImportSourceError(f"{path}: {exc}") from exc


def _artifacts(folder: Path) -> BaseArtifactService | None:
    # FileArtifactService creates its root: only open a folder that exists.
    return FileArtifactService(root_dir=folder) if folder.is_dir() else None


def _folder_stores(folder: Path, app: str | None) -> list[Store]:
    """An agents folder (`<agent>/.adk/session.db` each) or one agent's folder."""
    agents = [folder] if (folder / ".adk" / "session.db").is_file() else sorted(
        p for p in folder.iterdir() if (p / ".adk" / "session.db").is_file())
    if app:
        agents = [p for p in agents if p.name == app]
    if not agents:
        raise ImportSourceError(f"{folder}: no <agent>/.adk/session.db here"
                                + (f" for app {app!r}." if app else "; is it an `adk web` agents folder?"))
    return [Store(p.name, _readonly_sqlite(p / ".adk" / "session.db"), _artifacts(p / ".adk" / "artifacts"))
            for p in agents]


def _file_store(path: Path, app: str | None) -> Store:
    """A SqliteSessionService file; under `<agent>/.adk/` the app is the agent's name."""
    beside_agent = path.parent.name == ".adk"
    app_name = app or (path.parent.parent.resolve().name if beside_agent else None)
    if not app_name:
        raise ImportSourceError(f"{path}: pass --app: ADK's services list sessions per app.")
    return Store(app_name, _readonly_sqlite(path), _artifacts(path.parent / "artifacts"))


def _url_stores(reader: SourceReader, url: str, app: str | None) -> list[Store]:
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ImportSourceError(f"{url}: not a database URL ({exc}).") from exc
    if parsed.drivername not in URL_SCHEMES:
        raise ImportSourceError(f"{reader.label}: unsupported scheme {parsed.drivername!r} ({', '.join(URL_SCHEMES)}).")
    if parsed.drivername.startswith("sqlite") and not Path(parsed.database or "").is_file():
        raise ImportSourceError(f"{reader.label}: no such database file.")
    if not app:
        raise ImportSourceError(f"{reader.label}: pass --app: ADK's services list sessions per app.")
    try:
        service = DatabaseSessionService(url)
        has = reader.run(_has_adk_tables(service))
    except Exception as exc:
        raise ImportSourceError(f"{reader.label}: cannot open ({exc}).") from exc
    if not has:  # checked first: ADK's service would create its tables in any database
        reader.run(service.db_engine.dispose())
        raise ImportSourceError(f"{reader.label}: not an ADK session store (no sessions/events tables).")
    return [Store(app, service)]


async def _has_adk_tables(service: DatabaseSessionService) -> bool:
    async with service.db_engine.connect() as conn:
        names = await conn.run_sync(lambda c: set(sa_inspect(c).get_table_names()))
    return {"sessions", "events"} <= names


# ---- importing ---------------------------------------------------------------


def import_source(
    source: str, *, app: str | None = None, user: str | None = None, follow: bool = False,
    interval: float = 2.0, max_rounds: int | None = None, progress: Progress | None = None,
    summary: ImportSummary | None = None, sleep: Callable[[float], None] = time.sleep,
) -> ImportSummary:
    """Import what is new in SOURCE; with `follow`, poll again every `interval`
    seconds (`max_rounds` rounds, or until interrupted)."""
    summary = summary if summary is not None else ImportSummary()
    reader = open_source(source, app=app)
    try:
        rounds = 0
        while True:
            import_round(reader, user=user, progress=progress, summary=summary)
            rounds += 1
            if not follow or (max_rounds is not None and rounds >= max_rounds):
                return summary
            sleep(interval)
    finally:
        reader.close()


def import_round(reader: SourceReader, *, user: str | None, progress: Progress | None, summary: ImportSummary) -> None:
    for store in reader.stores:
        listed = reader.run(store.sessions.list_sessions(app_name=store.app_name, user_id=user)).sessions
        # Oldest first, so shared (user:, app:) keys end as the newest session wrote them.
        stubs = sorted(((s.last_update_time, s.user_id, s.id) for s in listed))
        del listed  # the listing carries each session's state: keep only ids
        newest: dict[str, tuple[SessionKey, dict[str, Any]]] = {}  # per user: O(users), not O(sessions)
        for done, (_, user_id, session_id) in enumerate(stubs, 1):
            shared = _import_one(reader, store, user_id, session_id, summary)
            if shared is not None:
                newest.pop(user_id, None)
                newest[user_id] = (SessionKey(store.app_name, user_id, session_id), shared)
            if progress:
                progress(done, len(stubs), store.app_name)
        _settle_shared(newest, summary)


def _settle_shared(newest: dict[str, tuple[SessionKey, dict[str, Any]]], summary: ImportSummary) -> None:
    """Shared keys are settled once every session is in: a session's events may
    write a `user:` key that a later session of the source wrote again, which
    is no disagreement. What still differs is kept as the source has it, on
    the user's newest session (the freshest read of the source)."""
    for key, shared in newest.values():
        with transaction.atomic():
            conflicts = _keep_source_values(key, shared)
        if conflicts:
            summary.conflicts.append((key.session_id, conflicts))


def _import_one(
    reader: SourceReader, store: Store, user_id: str, session_id: str, summary: ImportSummary
) -> dict[str, Any] | None:
    """Import one session whole or not at all; return the source's shared state it saw."""
    try:
        source = reader.run(store.sessions.get_session(app_name=store.app_name, user_id=user_id, session_id=session_id))
        if source is None:  # deleted since it was listed
            return None
        counts = ImportSummary()  # counted only once the session is in
        with transaction.atomic():
            conflicts = import_session(source, label=reader.label, summary=counts)
        if store.artifacts is not None:
            _import_artifacts(reader, store.artifacts, source, counts)
    except ValueError as exc:  # ADK's Event model, our limits (InputError), unstorable state
        summary.failed.append((session_id, str(exc)))
        return None
    summary.add(counts)
    if conflicts:
        summary.conflicts.append((session_id, conflicts))
    return {k: v for k, v in source.state.items() if k.startswith(("user:", "app:"))}


def import_session(source: AdkSession, *, label: str, summary: ImportSummary) -> list[str]:
    """Create (or extend) our copy of one ADK session; the caller holds the transaction.

    Returns the keys whose source value the events did not explain and that
    had to be written after them.
    """
    key = SessionKey(source.app_name, source.user_id, source.id)
    row = selectors.session_find(**key.__dict__)
    known: set[str] = set()
    if row is None:
        row = _create(source, key, label)
        summary.sessions_new += 1
    else:
        known = selectors.event_ids(row)
        summary.sessions_existing += 1
    for event in source.events:
        if event.id in known:
            summary.events_existing += 1
            continue
        event_append(key=key, event=event.model_copy(deep=True))
        summary.events_new += 1
    own = {k: v for k, v in source.state.items() if not k.startswith(("user:", "app:"))}
    return _keep_source_values(key, own)


def replay(events: list[AdkEvent]) -> dict[str, Any]:
    """The state (full keys) that the events' deltas alone produce from nothing."""
    state: dict[str, Any] = {}
    for event in events:
        for k, v in (event.actions.state_delta or {}).items():
            if not k.startswith("temp:"):
                state[k] = v
    return json_safe_state(state)


def initial_state(final: dict[str, Any], replayed: dict[str, Any], shared_now: dict[str, Any]) -> dict[str, Any]:
    """What the final state has that the deltas do not write. `user:`/`app:`
    keys already stored with the same value (by another session) are left out:
    shared state is set once, not once per session."""
    return {k: v for k, v in final.items()
            if k not in replayed and not k.startswith("temp:") and shared_now.get(k, _MISSING) != v}


def _create(source: AdkSession, key: SessionKey, label: str) -> Session:
    shared = _shared_state(key)
    state = initial_state(json_safe_state(dict(source.state)), replay(source.events), shared)
    return session_create(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id, state=state,
                          imported_from=label)


def _shared_state(key: SessionKey) -> dict[str, Any]:
    app = selectors.app_by_name(key.app_name)
    app_state = selectors.app_state_of(app) if app is not None else {}
    user_state = selectors.user_state_get(app_name=key.app_name, user_id=key.user_id)
    return {**{f"app:{k}": v for k, v in app_state.items()}, **{f"user:{k}": v for k, v in user_state.items()}}


def _keep_source_values(key: SessionKey, final: dict[str, Any]) -> list[str]:
    """Keep the source's value of every key where our state (initial state plus
    events) differs from it: a writer that bypassed append_event, or a shared
    key another session's events wrote later."""
    final = {k: v for k, v in final.items() if not k.startswith("temp:")}
    return session_state_correct(key=key, values=final)


def _import_artifacts(reader: SourceReader, artifacts: BaseArtifactService, source: AdkSession,
                      summary: ImportSummary) -> None:
    """Every version of every artifact the session sees (its own and the user's),
    in order; versions we already hold (by count) are skipped."""
    ours = DjangoArtifactService()
    scope = {"app_name": source.app_name, "user_id": source.user_id, "session_id": source.id}
    for filename in reader.run(artifacts.list_artifact_keys(**scope)):
        theirs = reader.run(artifacts.list_artifact_versions(filename=filename, **scope))
        have = len(ours.list_versions_sync(filename=filename, **scope))
        summary.artifacts_existing += min(have, len(theirs))
        for meta in sorted(theirs, key=lambda v: v.version)[have:]:
            part = reader.run(artifacts.load_artifact(filename=filename, version=meta.version, **scope))
            if part is None:
                continue
            ours.save_artifact_sync(filename=filename, artifact=part, custom_metadata=meta.custom_metadata or None,
                                    **scope)
            summary.artifacts_new += 1
