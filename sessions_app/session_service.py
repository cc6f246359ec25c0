"""`DjangoSessionService`: ADK sessions, events and scoped state in Django models.

Every async method has a `*_sync` twin for code without an event loop.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from google.adk.events import Event
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from pydantic import TypeAdapter
from typing_extensions import override

from adk_compat import set_storage_marker, storage_marker

from . import db_threads, selectors, services
from .keys import SessionKey
from .scopes import merge_state
from .services import SeenRevision


def _adk_session(app_name: str, row: selectors.ListedSession, events: list[Event] | None = None) -> Session:
    session = Session(
        id=row.session_id, app_name=app_name, user_id=row.user_id, state=row.state, events=events or [],
        last_update_time=row.update_time,
    )
    set_storage_marker(session, str(row.revision))
    return session


_SESSION_LIST = TypeAdapter(list[Session])
_LISTED_FIELDS = frozenset({"id", "app_name", "user_id", "state", "events", "last_update_time"})
# Listed rows are built straight into ADK's `Session` (what pydantic's `model_construct` does,
# at a third of validation's cost where `model_construct` costs double), while `Session` is
# exactly these fields and this private value, with no validator to run: our columns already
# hold their types (text ids, a JSON object, a float). An ADK whose `Session` is anything else
# gets validated ones; tests/sessions_app/test_session_service_build.py holds both equal.
_BUILD_DIRECT = (
    frozenset(Session.model_fields) == _LISTED_FIELDS
    and set(Session.__private_attributes__) == {"_storage_update_marker"}
    and Session.model_config.get("extra") != "allow"
    and not any(getattr(Session.__pydantic_decorators__, kind) for kind in (
        "validators", "field_validators", "root_validators", "model_validators"))
)


def _adk_sessions(app_name: str, rows: list[selectors.ListedSession]) -> list[Session]:
    """ADK's `Session`s of listed rows (no events), with their storage markers."""
    if not _BUILD_DIRECT:
        return _validated_sessions(app_name, rows)
    sessions = []
    for row in rows:
        session = Session.__new__(Session)
        object.__setattr__(session, "__dict__", {
            "id": row.session_id, "app_name": app_name, "user_id": row.user_id, "state": row.state, "events": [],
            "last_update_time": row.update_time,
        })
        object.__setattr__(session, "__pydantic_fields_set__", _LISTED_FIELDS)
        object.__setattr__(session, "__pydantic_extra__", None)
        object.__setattr__(session, "__pydantic_private__", {"_storage_update_marker": str(row.revision)})
        sessions.append(session)
    return sessions


def _validated_sessions(app_name: str, rows: list[selectors.ListedSession]) -> list[Session]:
    """`_adk_sessions` through pydantic's validation, in one call (a quarter less than one by one)."""
    sessions = _SESSION_LIST.validate_python([
        {"id": row.session_id, "app_name": app_name, "user_id": row.user_id, "state": row.state, "events": [],
         "last_update_time": row.update_time}
        for row in rows
    ])
    for session, row in zip(sessions, rows):
        set_storage_marker(session, str(row.revision))
    return sessions


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a long list is built.

    A whole app's list allocates a dozen objects a session and keeps them
    all, so the collector ran again and again over a heap that only grew:
    at 10 000 sessions it took three quarters of the list's time (and ADK's
    services pay it the same way). Nothing built here is cyclic garbage, so
    nothing is left for later; a list built meanwhile on another thread just
    runs as before. Not re-enabled if something else had turned it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _seen(session: Session) -> SeenRevision:
    marker = storage_marker(session)
    return SeenRevision(
        revision=int(marker) if marker is not None and marker.isdigit() else None,
        last_update_time=session.last_update_time,
        last_event_id=session.events[-1].id if session.events else None,
    )


class DjangoSessionService(BaseSessionService):
    """ADK sessions, events and scoped state stored in Django models."""

    # ---- sync implementations -------------------------------------------------

    def create_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> Session:
        created, app_state, user_state = services.session_create_with_shared(
            app_name=app_name, user_id=user_id, session_id=session_id, state=state)
        listed = selectors.ListedSession(
            created.session_id, user_id, created.update_time, created.revision,
            merge_state(app_state, user_state, created.state),
        )
        return _adk_session(app_name, listed)

    def get_session_sync(
        self, *, app_name: str, user_id: str, session_id: str, config: Optional[GetSessionConfig] = None
    ) -> Optional[Session]:
        config = config or GetSessionConfig()
        found = selectors.adk_session_read(
            app_name=app_name, user_id=user_id, session_id=session_id, num_recent_events=config.num_recent_events,
            after_timestamp=config.after_timestamp,
        )
        if found is None:
            return None
        listed, data = found
        return _adk_session(app_name, listed, selectors.adk_events(data))

    def list_sessions_sync(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        with _collector_paused():
            listed = selectors.session_list(app_name=app_name, user_id=user_id)
            return ListSessionsResponse(sessions=_adk_sessions(app_name, listed))

    def list_sessions_page_sync(
        self, *, app_name: str, user_id: Optional[str] = None, page_size: int,
        after: Optional[selectors.SessionPosition] = None,
    ) -> tuple[list[Session], Optional[selectors.SessionPosition]]:
        """A keyset page of `list_sessions`: up to `page_size` sessions after position `after`,
        and the position the next page starts after (None: this is the last)."""
        listed = selectors.session_list(app_name=app_name, user_id=user_id, after=after, limit=page_size + 1)
        page = listed[:page_size]
        more = len(listed) > page_size
        last = page[-1] if page else None
        position = selectors.SessionPosition(last.update_time, last.user_id, last.session_id) if more and last else None
        return _adk_sessions(app_name, page), position

    def delete_session_sync(self, *, app_name: str, user_id: str, session_id: str) -> None:
        services.session_delete(key=SessionKey(app_name, user_id, session_id))

    def get_user_state_sync(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return selectors.user_state_get(app_name=app_name, user_id=user_id)

    def append_event_sync(self, session: Session, event: Event) -> Event:
        if event.partial:
            services.partial_event_show(key=SessionKey(session.app_name, session.user_id, session.id), event=event)
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        row = services.event_append(
            key=SessionKey(session.app_name, session.user_id, session.id), event=event, seen=_seen(session)
        )
        set_storage_marker(session, str(row.seq))
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    # ---- the async API ADK calls ---------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> Session:
        return await db_threads.run(
            self.create_session_sync, write=True, app_name=app_name, user_id=user_id, state=state, session_id=session_id
        )

    @override
    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: Optional[GetSessionConfig] = None
    ) -> Optional[Session]:
        return await db_threads.run(
            self.get_session_sync, app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )

    @override
    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        return await db_threads.run(self.list_sessions_sync, app_name=app_name, user_id=user_id)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await db_threads.run(
            self.delete_session_sync, write=True, app_name=app_name, user_id=user_id, session_id=session_id
        )

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await db_threads.run(self.get_user_state_sync, app_name=app_name, user_id=user_id)

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        return await db_threads.run(self.append_event_sync, session, event, write=not event.partial)
