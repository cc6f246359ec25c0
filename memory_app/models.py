"""Storage for ADK artifacts and long-term memory.

Artifacts: one `Artifact` row per name in a scope (a session, or the user's
`user:` namespace) and one `ArtifactVersion` row per save. The payload lives in
Django's default storage under a generated name (never derived from the
artifact's own name); the database holds the metadata and the `types.Part`
without its payload, so a load rebuilds exactly the part that was saved.

Memory: one `MemoryEvent` row per remembered event (ADK's SQLite memory
service names its table `memory_events`), keyed like ADK's by app, user,
session and event id so re-adding a session never duplicates anything.
`SessionMemory` records how far each stored session has been offloaded.
"""
from __future__ import annotations

import uuid
from typing import Any

from django.db import models

USER_PREFIX = "user:"


def _payload_path(instance: ArtifactVersion, filename: str) -> str:
    # A generated name: the artifact's own name (which may hold "../", "/"
    # or anything else) never reaches the filesystem.
    token = uuid.uuid4().hex
    return f"adkui/artifacts/{token[:2]}/{token}"


class Artifact(models.Model):
    """One artifact name in one scope; `session_id` is "" for `user:` artifacts."""

    app_name = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    session_id = models.CharField(max_length=255, blank=True, default="")
    filename = models.CharField(max_length=1024, help_text="Name without the user: prefix.")
    created_at = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app_name", "user_id", "session_id", "filename"], name="unique_artifact")
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def is_user_scoped(self) -> bool:
        return self.session_id == ""

    @property
    def key(self) -> str:
        """The name ADK lists it under, and the one that loads it from any session."""
        return USER_PREFIX + self.filename if self.is_user_scoped else self.filename


class ArtifactVersion(models.Model):
    KIND_TEXT = "text"
    KIND_INLINE = "inline"
    KIND_FILE = "file"  # a file_data URI; the content lives elsewhere
    KINDS = [(KIND_TEXT, "text"), (KIND_INLINE, "inline data"), (KIND_FILE, "file reference")]

    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=KINDS)
    mime_type = models.CharField(max_length=255, null=True, blank=True)
    payload = models.FileField(upload_to=_payload_path, max_length=255, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    part = models.JSONField(help_text="The saved types.Part without its text or inline bytes.")
    custom_metadata = models.JSONField(default=dict, blank=True)
    create_time = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["artifact", "version"], name="unique_artifact_version")]
        ordering = ["artifact", "version"]

    def __str__(self) -> str:
        return f"{self.artifact_id} v{self.version}"

    @property
    def display_name(self) -> str | None:
        return (self.part.get("inline_data") or {}).get("display_name")

    @property
    def file_uri(self) -> str | None:
        return (self.part.get("file_data") or {}).get("file_uri")


class MemoryEventQuerySet(models.QuerySet["MemoryEvent"]):
    def for_user(self, *, app_name: str, user_id: str) -> MemoryEventQuerySet:
        return self.filter(app_name=app_name, user_id=user_id, forgotten=False)


class MemoryEvent(models.Model):
    """One remembered event (or one memory written directly with `add_memory`).

    `forgotten` rows are tombstones: `delete_memory` keeps the key so that
    re-adding the session does not bring the memory back, as ADK's in-memory
    service promises.
    """

    app_name = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    session_id = models.CharField(max_length=255, blank=True, default="", help_text='"" when not from a session.')
    event_id = models.CharField(max_length=255)
    # The stored session it came from, for links; memory outlives the session.
    source_session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.SET_NULL, null=True, blank=True, related_name="memories"
    )
    author = models.CharField(max_length=255, blank=True, default="")
    timestamp = models.FloatField()
    timestamp_text = models.CharField(max_length=64, blank=True, default="", help_text="As given to add_memory.")
    content = models.JSONField()
    search_text = models.TextField()
    custom_metadata = models.JSONField(default=dict, blank=True)
    forgotten = models.BooleanField(default=False)

    objects = MemoryEventQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app_name", "user_id", "session_id", "event_id"], name="unique_memory_event")
        ]
        indexes = [models.Index(fields=["app_name", "user_id", "timestamp"], name="memory_scope_time")]

    def __str__(self) -> str:
        return f"{self.author}: {self.search_text[:40]}"

    def text(self) -> str:
        return " ".join(p["text"] for p in self.content.get("parts", []) if p.get("text") and not p.get("thought"))

    def as_metadata(self) -> dict[str, Any]:
        meta = dict(self.custom_metadata)
        if self.session_id:
            meta.update(session_id=self.session_id, event_id=self.event_id)
        return meta


class SessionMemory(models.Model):
    """How far one stored session has been offloaded to memory, and why."""

    REASON_MANUAL = "manual"
    REASON_RESET = "reset"
    REASON_TIMEOUT = "timeout"
    REASON_AGENT = "agent"

    session = models.OneToOneField("sessions_app.Session", on_delete=models.CASCADE, related_name="memory_offload")
    revision = models.PositiveBigIntegerField(help_text="Session revision (event count) when last offloaded.")
    event_count = models.PositiveIntegerField(default=0, help_text="Memory rows written from this session.")
    reason = models.CharField(max_length=16)
    offloaded_at = models.FloatField()

    def __str__(self) -> str:
        return f"memory of session {self.session_id} @ {self.revision}"
