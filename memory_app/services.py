"""Writes: artifact versions and long-term memory.

Every rule the ADK adapters (`artifact_service`, `memory_service`), the
REST API and the panels share lives here or in `selectors`. Bad input is
refused with ADK's `InputValidationError` before anything is written.
"""
from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Max, Q
from google.adk.artifacts import artifact_util
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events.event import Event as AdkEvent
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.platform import time as platform_time
from google.genai import types
from pydantic_core import PydanticSerializationError, to_jsonable_python

from access import limits

from sessions_app import relay
from sessions_app import selectors as session_selectors
from sessions_app.models import Session

from . import broadcast, conf, words
from .models import Artifact, ArtifactVersion, MemoryEvent, SessionMemory
from .naming import ArtifactKey

logger = logging.getLogger(__name__)


class ArtifactTooLargeError(InputValidationError):
    """The payload is larger than `ADKUI_MAX_ARTIFACT_BYTES`."""


# ---- artifacts ----------------------------------------------------------------


def artifact_save(
    *, key: ArtifactKey, part: types.Part, custom_metadata: Optional[Mapping[str, Any]] = None
) -> ArtifactVersion:
    """Store `part` as the next version of the artifact (the first is 0)."""
    kind, data, mime_type = _classify(key, part)
    if data is not None and len(data) > conf.max_artifact_bytes():
        raise ArtifactTooLargeError(
            f"Artifact {key.filename!r} is {len(data)} bytes; the limit is {conf.max_artifact_bytes()} bytes "
            "(ADKUI_MAX_ARTIFACT_BYTES)."
        )
    row = ArtifactVersion(
        kind=kind,
        mime_type=mime_type,
        size=len(data or b""),
        part=_part_without_payload(part, kind),
        custom_metadata=_json_metadata(custom_metadata),
        create_time=platform_time.get_time(),  # ADK's clock, which tests and replays may set
    )
    if data is not None:
        # Written before the transaction so no lock is held during file IO.
        row.payload.save("payload", ContentFile(data), save=False)
    try:
        with transaction.atomic():
            artifact = _locked_artifact(key, row.create_time)
            row.artifact = artifact
            newest = artifact.versions.aggregate(newest=Max("version"))["newest"]
            row.version = 0 if newest is None else newest + 1
            row.save()
            relay.on_commit(broadcast.artifacts_changed, **key.as_filter(), version=row.version)
    except BaseException:
        if row.payload:
            row.payload.delete(save=False)
        raise
    return row


def artifact_delete(*, key: ArtifactKey) -> bool:
    """Delete every version; the next save starts again at version 0, as in ADK."""
    with transaction.atomic():
        artifact = Artifact.objects.filter(**key.as_filter()).first()
        if artifact is None:
            return False
        names = [n for n in artifact.versions.values_list("payload", flat=True) if n]
        artifact.delete()
        # Files go only once the rows are surely gone.
        transaction.on_commit(lambda: _delete_files(names), robust=True)  # files left behind never fail the delete
        relay.on_commit(broadcast.artifacts_changed, **key.as_filter(), version=None)
    return True


def _locked_artifact(key: ArtifactKey, now: float) -> Artifact:
    # The lock on the artifact row serialises concurrent saves of one name
    # on PostgreSQL; SQLite's BEGIN IMMEDIATE serialises all writers anyway.
    artifact, _ = Artifact.objects.select_for_update().get_or_create(**key.as_filter(), defaults={"created_at": now})
    return artifact


def _classify(key: ArtifactKey, part: types.Part) -> tuple[str, Optional[bytes], Optional[str]]:
    """(kind, payload bytes or None, mime type) of a part, or InputValidationError."""
    if part.inline_data is not None:
        if part.inline_data.data is None:
            raise InputValidationError("Artifact inline_data must contain data.")
        mime = part.inline_data.mime_type or "application/octet-stream"
        return ArtifactVersion.KIND_INLINE, part.inline_data.data, mime
    if part.text is not None:
        return ArtifactVersion.KIND_TEXT, part.text.encode("utf-8"), "text/plain"
    if part.file_data is not None:
        if artifact_util.is_artifact_ref(part):
            _check_reference(key, part.file_data.file_uri or "")
            return ArtifactVersion.KIND_FILE, None, None  # known once the target loads
        return ArtifactVersion.KIND_FILE, None, part.file_data.mime_type
    raise InputValidationError("Not supported artifact type: the part has no text, inline_data or file_data.")


def _check_reference(key: ArtifactKey, uri: str) -> None:
    parsed = artifact_util.parse_artifact_uri(uri)
    if parsed is None:
        raise InputValidationError(f"Invalid artifact reference URI: {uri}")
    artifact_util.validate_artifact_reference_scope(
        app_name=key.app_name, user_id=key.user_id, session_id=key.session_id or None, parsed_uri=parsed
    )


def _part_without_payload(part: types.Part, kind: str) -> dict[str, Any]:
    data = part.model_dump(mode="json", exclude_none=True)
    if kind == ArtifactVersion.KIND_INLINE:
        data["inline_data"].pop("data", None)
    elif kind == ArtifactVersion.KIND_TEXT:
        data.pop("text", None)
    try:
        limits.dumps(data, "artifact")  # the part's other fields are stored as JSON: storable on every database
    except limits.InputError as exc:
        raise InputValidationError(str(exc)) from exc
    return data


def _json_metadata(metadata: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    try:
        value = to_jsonable_python(dict(metadata or {}))
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise InputValidationError(f"Artifact custom_metadata has no JSON form: {exc}") from exc
    try:
        limits.dumps(value, "customMetadata")  # storable on every database
    except limits.InputError as exc:
        raise InputValidationError(str(exc)) from exc
    return value


def _delete_files(names: Iterable[str]) -> None:
    for name in names:
        try:
            default_storage.delete(name)
        except OSError:  # already gone, or unreadable: the rows are what count
            logger.warning("Could not delete artifact payload %s", name, exc_info=True)


# ---- memory -------------------------------------------------------------------


def memory_add_events(
    *,
    app_name: str,
    user_id: str,
    events: Sequence[AdkEvent],
    session_id: Optional[str] = None,
    session: Optional[Session] = None,
    custom_metadata: Optional[Mapping[str, object]] = None,
) -> int:
    """Remember the events that carry text; re-adding one updates it in place.

    A forgotten (deleted) memory stays forgotten: the upsert never touches
    the `forgotten` column.
    """
    meta = _json_metadata(custom_metadata)
    rows = _unique([_memory_row(app_name, user_id, session_id or "", session, event, meta) for event in events])
    if rows:
        MemoryEvent.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["app_name", "user_id", "session_id", "event_id"],
            update_fields=["author", "timestamp", "content", "search_text", "custom_metadata", "source_session"],
        )
    return len(rows)


def _memory_row(
    app_name: str, user_id: str, session_id: str, session: Optional[Session], event: AdkEvent, meta: dict[str, Any]
) -> MemoryEvent | None:
    if not event.content or not event.content.parts:
        return None
    content = event.content.model_dump(mode="json", exclude_none=True)
    text = words.search_text(content)
    if not text:
        return None  # nothing a search could ever match
    timestamp = float(event.timestamp if event.timestamp is not None else time.time())
    return MemoryEvent(
        app_name=app_name, user_id=user_id, session_id=session_id, source_session=session,
        event_id=event.id or _content_hash(event.author or "", timestamp, content),
        author=event.author or "", timestamp=timestamp, content=content, search_text=text, custom_metadata=meta,
    )


def _unique(rows: list[MemoryEvent | None]) -> list[MemoryEvent]:
    # One upsert may not touch a row twice (PostgreSQL refuses), so the last
    # copy of a repeated event wins, as it would over two calls.
    by_key = {(r.session_id, r.event_id): r for r in rows if r is not None}
    return list(by_key.values())


def _content_hash(author: str, timestamp: float, content: dict[str, Any]) -> str:
    # An event without an id still gets a stable key, so re-adding it is idempotent.
    return hashlib.sha256(f"{author}:{timestamp}:{content}".encode()).hexdigest()[:32]


def memory_add_session(
    *, app_name: str, user_id: str, session_id: str, events: Sequence[AdkEvent], reason: str, revision: int | None = None
) -> int:
    """Remember a whole session (idempotent) and record how far it was offloaded."""
    with transaction.atomic():
        row = Session.objects.for_key(app_name=app_name, user_id=user_id, session_id=session_id).first()
        count = memory_add_events(app_name=app_name, user_id=user_id, session_id=session_id, events=events, session=row)
        if row is not None:
            SessionMemory.objects.update_or_create(
                session=row,
                defaults={
                    "revision": row.revision if revision is None else revision,
                    "event_count": MemoryEvent.objects.filter(source_session=row, forgotten=False).count(),
                    "reason": reason,
                    "offloaded_at": time.time(),
                },
            )
    return count


def session_offload(*, session: Session, reason: str = SessionMemory.REASON_MANUAL) -> int:
    """Offload a stored session to memory, reading its events from the database."""
    events = session_selectors.adk_events(session_selectors.session_event_json(session=session))
    return memory_add_session(
        app_name=session.app.name, user_id=session.user_id, session_id=session.session_id,
        events=events, reason=reason, revision=session.revision,
    )


def session_end(*, session: Session, reason: str = SessionMemory.REASON_RESET) -> bool:
    """A session ended (the chat was reset, or it timed out): offload it when the
    `ADKUI_MEMORY_OFFLOAD` setting asks for that reason. Returns whether it did."""
    if reason not in conf.memory_offload_triggers() or session.revision == 0:
        return False
    session_offload(session=session, reason=reason)
    return True


def memory_offload_idle(*, app_name: str | None = None, user_id: str | None = None, now: float | None = None) -> int:
    """Offload every session idle for `ADKUI_MEMORY_IDLE_SECONDS` whose newest
    events are not in memory yet (only when `timeout` is an offload trigger)."""
    if SessionMemory.REASON_TIMEOUT not in conf.memory_offload_triggers():
        return 0
    cutoff = (time.time() if now is None else now) - conf.memory_idle_seconds()
    idle = Session.objects.select_related("app").filter(update_time__lt=cutoff, revision__gt=0).filter(
        Q(memory_offload__isnull=True) | Q(memory_offload__revision__lt=F("revision"))
    )
    if app_name is not None:
        idle = idle.filter(app__name=app_name)
    if user_id is not None:
        idle = idle.filter(user_id=user_id)
    sessions = list(idle)
    for session in sessions:
        session_offload(session=session, reason=SessionMemory.REASON_TIMEOUT)
    return len(sessions)


def memory_add_entries(
    *,
    app_name: str,
    user_id: str,
    memories: Sequence[MemoryEntry],
    custom_metadata: Optional[Mapping[str, object]] = None,
) -> int:
    """Remember explicit `MemoryEntry` items (ADK's optional `add_memory`)."""
    shared = _json_metadata(custom_metadata)
    rows = []
    for entry in memories:
        content = entry.content.model_dump(mode="json", exclude_none=True)
        text = words.search_text(content)
        if not text:
            raise InputValidationError("A memory must contain some text.")
        rows.append(MemoryEvent(
            app_name=app_name, user_id=user_id, session_id="",
            event_id=entry.id or _content_hash(entry.author or "", 0.0, content),
            author=entry.author or "", timestamp=time.time(), timestamp_text=entry.timestamp or "",
            content=content, search_text=text, custom_metadata={**shared, **_json_metadata(entry.custom_metadata)},
        ))
    rows = _unique(rows)
    MemoryEvent.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["app_name", "user_id", "session_id", "event_id"],
        update_fields=["author", "timestamp_text", "content", "search_text", "custom_metadata"],
    )
    return len(rows)


def memory_forget(*, app_name: str, user_id: str, memory_id: str | None) -> bool:
    """Forget one memory (the `MemoryEntry.id` a search returned); keeps a tombstone."""
    if not memory_id or not str(memory_id).isdigit():
        return False
    rows = MemoryEvent.objects.for_user(app_name=app_name, user_id=user_id).filter(pk=int(memory_id))
    return bool(rows.update(forgotten=True))
