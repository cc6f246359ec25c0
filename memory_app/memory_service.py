"""`DjangoMemoryService`: ADK long-term memory in the database.

Every async method has a `*_sync` twin. Search is scoped to one app and one
user and ranked by relevance: PostgreSQL full-text search on PostgreSQL,
keyword scoring elsewhere (see `memory_app.selectors.memory_search`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Optional

from asgiref.sync import sync_to_async
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types
from typing_extensions import override

from adk_compat import storage_marker

from . import selectors, services
from .models import MemoryEvent, SessionMemory


def adk_memory(row: MemoryEvent) -> MemoryEntry:
    return MemoryEntry(
        id=str(row.pk),
        content=types.Content.model_validate(row.content),
        author=row.author or None,
        # ADK's own format (local-time ISO 8601), unless add_memory gave one.
        timestamp=row.timestamp_text or _iso(row.timestamp),
        custom_metadata=row.as_metadata(),
    )


def _iso(timestamp: float) -> str:
    try:
        return datetime.fromtimestamp(timestamp).isoformat()
    except (ValueError, OverflowError, OSError):  # stored before timestamps were checked
        return str(timestamp)


def _revision(session: Session) -> Optional[int]:
    marker = storage_marker(session)
    return int(marker) if marker is not None and marker.isdigit() else None


class DjangoMemoryService(BaseMemoryService):
    """Sessions offloaded to memory and searched later, per app and user."""

    # ---- sync implementations -------------------------------------------------

    def add_session_to_memory_sync(self, session: Session) -> None:
        services.memory_add_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id,
            events=session.events, reason=SessionMemory.REASON_AGENT, revision=_revision(session),
        )

    def add_events_to_memory_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        services.memory_add_events(
            app_name=app_name, user_id=user_id, events=events, session_id=session_id, custom_metadata=custom_metadata
        )

    def add_memory_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        services.memory_add_entries(
            app_name=app_name, user_id=user_id, memories=memories, custom_metadata=custom_metadata
        )

    def search_memory_sync(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        # Sessions that went idle are offloaded first (ADKUI_MEMORY_OFFLOAD
        # "timeout"), so a search sees them without any scheduler running.
        services.memory_offload_idle(app_name=app_name, user_id=user_id)
        found = selectors.memory_search(app_name=app_name, user_id=user_id, query=query)
        return SearchMemoryResponse(memories=[adk_memory(row) for row, _ in found])

    def delete_memory_sync(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        services.memory_forget(app_name=app_name, user_id=user_id, memory_id=memory_id)

    # ---- the async API ADK calls ---------------------------------------------

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await sync_to_async(self.add_session_to_memory_sync)(session)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await sync_to_async(self.add_events_to_memory_sync)(
            app_name=app_name, user_id=user_id, events=events, session_id=session_id, custom_metadata=custom_metadata
        )

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await sync_to_async(self.add_memory_sync)(
            app_name=app_name, user_id=user_id, memories=memories, custom_metadata=custom_metadata
        )

    @override
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        return await sync_to_async(self.search_memory_sync)(app_name=app_name, user_id=user_id, query=query)

    @override
    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        await sync_to_async(self.delete_memory_sync)(app_name=app_name, user_id=user_id, memory_id=memory_id)
