"""`DjangoArtifactService`: ADK artifacts, payloads in Django storage, metadata in the database.

Every async method has a `*_sync` twin for code without an event loop. The
rules (scopes, versions, size limit, name checks) live in `memory_app`.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from asgiref.sync import sync_to_async
from google.adk.artifacts.base_artifact_service import ArtifactVersion, BaseArtifactService, ensure_part
from google.genai import types
from typing_extensions import override

from . import selectors, services
from .models import ArtifactVersion as VersionRow
from .naming import artifact_key


def adk_version(row: VersionRow) -> ArtifactVersion:
    return ArtifactVersion(
        version=row.version,
        canonical_uri=selectors.canonical_uri(row),
        custom_metadata=dict(row.custom_metadata),
        create_time=row.create_time,
        mime_type=row.mime_type,
    )


class DjangoArtifactService(BaseArtifactService):
    """Versioned artifacts: `user:` names (or no session) are shared by the user's sessions."""

    # ---- sync implementations -------------------------------------------------

    def save_artifact_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: Union[types.Part, dict[str, Any]],
        session_id: Optional[str] = None,
        custom_metadata: Optional[dict[str, Any]] = None,
    ) -> int:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        row = services.artifact_save(key=key, part=ensure_part(artifact), custom_metadata=custom_metadata)
        return row.version

    def load_artifact_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[types.Part]:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        return selectors.artifact_load(key, version)

    def list_artifact_keys_sync(self, *, app_name: str, user_id: str, session_id: Optional[str] = None) -> list[str]:
        return selectors.artifact_keys(app_name=app_name, user_id=user_id, session_id=session_id)

    def delete_artifact_sync(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> None:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        services.artifact_delete(key=key)

    def list_versions_sync(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[int]:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        return [row.version for row in selectors.artifact_versions(key)]

    def list_artifact_versions_sync(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[ArtifactVersion]:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        return [adk_version(row) for row in selectors.artifact_versions(key)]

    def get_artifact_version_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[ArtifactVersion]:
        key = artifact_key(app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)
        row = selectors.artifact_version(key, version)
        return adk_version(row) if row is not None else None

    # ---- the async API ADK calls ---------------------------------------------

    @override
    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: Union[types.Part, dict[str, Any]],
        session_id: Optional[str] = None,
        custom_metadata: Optional[dict[str, Any]] = None,
    ) -> int:
        return await sync_to_async(self.save_artifact_sync)(
            app_name=app_name, user_id=user_id, filename=filename, artifact=artifact,
            session_id=session_id, custom_metadata=custom_metadata,
        )

    @override
    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[types.Part]:
        return await sync_to_async(self.load_artifact_sync)(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id, version=version
        )

    @override
    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: Optional[str] = None
    ) -> list[str]:
        return await sync_to_async(self.list_artifact_keys_sync)(app_name=app_name, user_id=user_id, session_id=session_id)

    @override
    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> None:
        await sync_to_async(self.delete_artifact_sync)(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )

    @override
    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[int]:
        return await sync_to_async(self.list_versions_sync)(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )

    @override
    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[ArtifactVersion]:
        return await sync_to_async(self.list_artifact_versions_sync)(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )

    @override
    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[ArtifactVersion]:
        return await sync_to_async(self.get_artifact_version_sync)(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id, version=version
        )
