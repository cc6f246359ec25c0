"""ADK's artifact and memory routes, in the shape `adk api_server` serves them.

Paths, bodies and JSON (camelCase, nulls left out) follow
`google/adk/cli/api_server.py`; errors are `{"detail": ...}` with its status
codes: 400 bad input, 404 not found, 422 a version id that is not a number,
plus 413 for a payload over `ADKUI_MAX_ARTIFACT_BYTES`.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from django.http import HttpRequest, JsonResponse
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, alias_generators
from drf_spectacular.utils import OpenApiParameter, extend_schema
from google.adk.artifacts.base_artifact_service import ArtifactVersion
from rest_framework.request import Request
from rest_framework.views import APIView

from access import limits
from sessions_app.apis.schema import NULL, errors
from sessions_app.session_service import DjangoSessionService

from .artifact_service import DjangoArtifactService
from .memory_service import DjangoMemoryService
from .models import USER_PREFIX
from .naming import FILENAME_PATTERN, MAX_FILENAME_LENGTH

from . import conf
from .services import ArtifactTooLargeError

# Base64 inflates a payload by 4/3; the rest of a save request is small.
_JSON_OVERHEAD = 64 * 1024


class _CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True)


class SaveArtifactRequest(_CamelModel):
    filename: str = Field(json_schema_extra={"pattern": FILENAME_PATTERN, "maxLength": len(USER_PREFIX) + MAX_FILENAME_LENGTH},
                          description="Not blank, no control characters, relative (no leading / or drive, no `..`); "
                                      "`user:` first for a user-scoped artifact.")
    artifact: types.Part
    custom_metadata: Optional[dict[str, Any]] = None


class ArtifactVersionList(RootModel[list[ArtifactVersion]]):
    """The metadata of every version of an artifact (for the schema)."""


class UpdateMemoryRequest(_CamelModel):
    session_id: str = Field(json_schema_extra={"pattern": limits.NON_BLANK_TEXT, "maxLength": limits.MAX_ID_CHARS})


def _json(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(_plain(data), status=status, safe=False)


def _plain(data: Any) -> Any:
    """ADK's JSON form of a response: camelCase keys, no nulls (as FastAPI sends it)."""
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(data, list):
        return [_plain(item) for item in data]
    return data


def _detail(message: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


MAX_VERSION = 2**31 - 1  # the version column's integer
VERSION_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": MAX_VERSION},
                            {"type": "string", "enum": ["latest"]}]}
VERSION_PARAMETER = OpenApiParameter(
    "version", VERSION_SCHEMA, description="A version number, or `latest` (the default); anything else is a 422.",
)
VERSION_ID_PARAMETER = OpenApiParameter(
    "version_id", VERSION_SCHEMA, OpenApiParameter.PATH,
    description="A version number, or `latest`; anything else is a 422, as in ADK's server.",
)


class _Api(APIView):
    """Maps ADK's input errors to the status codes ADK's server uses."""

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, ArtifactTooLargeError):
            return _detail(str(exc), 413)
        if isinstance(exc, InputValidationError):
            return _detail(str(exc), 400)
        if isinstance(exc, ValidationError):
            return JsonResponse({"detail": json.loads(exc.json(include_url=False, include_input=False))}, status=422)
        if isinstance(exc, (ValueError, TypeError, AttributeError)) and getattr(self, "_parsing", False):
            # google-genai's validators can fail on odd input without a ValidationError.
            return _detail(f"Invalid request body: {exc}", 422)
        return super().handle_exception(exc)


def _version(value: Optional[str]) -> Optional[int]:
    """None for "latest" (or absent); ValueError for anything but a version number's digits
    (Python's int() also reads " 5", "+5", "-1" and other scripts' digits)."""
    if value is None or value == "latest":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_VERSION:
        raise ValueError(value)
    return int(value)


def _read_body(request: Request) -> bytes:
    # Read the stream directly: Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB)
    # would otherwise cap artifacts below ADKUI_MAX_ARTIFACT_BYTES.
    limit = conf.max_artifact_bytes() * 4 // 3 + _JSON_OVERHEAD
    raw: HttpRequest = request._request
    length = int(raw.META.get("CONTENT_LENGTH") or 0)
    body = raw.read(limit + 1) if length <= limit else b""
    if length > limit or len(body) > limit:
        raise ArtifactTooLargeError(
            f"Request body of {max(length, len(body))} bytes is over the artifact limit (ADKUI_MAX_ARTIFACT_BYTES)."
        )
    return body


class ArtifactListApi(_Api):
    """GET: the artifact names a session can read. POST: save a new version."""

    @extend_schema(operation_id="artifact_list", tags=["artifacts"], responses=list[str])
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> JsonResponse:
        names = DjangoArtifactService().list_artifact_keys_sync(app_name=app_name, user_id=user_id, session_id=session_id)
        return _json(names)

    @extend_schema(operation_id="artifact_save", tags=["artifacts"], request=SaveArtifactRequest,
                   responses={200: ArtifactVersion, **errors(413, 422)})
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> JsonResponse:
        self._parsing = True
        body = SaveArtifactRequest.model_validate_json(_read_body(request))
        self._parsing = False
        service = DjangoArtifactService()
        version = service.save_artifact_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=body.filename,
            artifact=body.artifact, custom_metadata=body.custom_metadata,
        )
        meta = service.get_artifact_version_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=body.filename, version=version
        )
        return _json(meta)


class ArtifactDetailApi(_Api):
    """GET: load (latest, or `?version=`). DELETE: delete every version."""

    @extend_schema(operation_id="artifact_load", tags=["artifacts"], parameters=[VERSION_PARAMETER],
                   responses={200: types.Part, **errors(422)})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str) -> JsonResponse:
        try:
            version = _version(request.query_params.get("version"))
        except ValueError:
            return _detail("Invalid version", 422)
        return _load(app_name, user_id, session_id, artifact_name, version)

    @extend_schema(operation_id="artifact_delete", tags=["artifacts"], responses={200: NULL})
    def delete(self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str) -> JsonResponse:
        DjangoArtifactService().delete_artifact_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
        )
        return _json(None)


def _load(app_name: str, user_id: str, session_id: str, filename: str, version: Optional[int]) -> JsonResponse:
    part = DjangoArtifactService().load_artifact_sync(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=filename, version=version
    )
    if part is None:
        return _detail("Artifact not found", 404)
    return _json(part)


class ArtifactVersionListApi(_Api):
    @extend_schema(operation_id="artifact_versions", tags=["artifacts"], responses=list[int])
    def get(self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str) -> JsonResponse:
        versions = DjangoArtifactService().list_versions_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
        )
        return _json(versions)


class ArtifactVersionMetadataListApi(_Api):
    @extend_schema(operation_id="artifact_versions_metadata", tags=["artifacts"], responses=ArtifactVersionList)
    def get(self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str) -> JsonResponse:
        versions = DjangoArtifactService().list_artifact_versions_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
        )
        return _json(versions)


class ArtifactVersionDetailApi(_Api):
    @extend_schema(operation_id="artifact_version_load", tags=["artifacts"], parameters=[VERSION_ID_PARAMETER],
                   responses={200: types.Part, **errors(422)})
    def get(
        self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str, version_id: str
    ) -> JsonResponse:
        try:
            version = _version(version_id)
        except ValueError:
            return _detail("Invalid version ID", 422)
        return _load(app_name, user_id, session_id, artifact_name, version)


class ArtifactVersionMetadataApi(_Api):
    @extend_schema(operation_id="artifact_version_metadata", tags=["artifacts"], parameters=[VERSION_ID_PARAMETER],
                   responses={200: ArtifactVersion, **errors(422)})
    def get(
        self, request: Request, app_name: str, user_id: str, session_id: str, artifact_name: str, version_id: str
    ) -> JsonResponse:
        try:
            version = _version(version_id)
        except ValueError:
            return _detail("Invalid version ID", 422)
        meta = DjangoArtifactService().get_artifact_version_sync(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name, version=version
        )
        if meta is None:
            return _detail("Artifact version not found", 404)
        return _json(meta)


class MemoryUpdateApi(_Api):
    """PATCH: add a stored session to the user's memory (idempotent)."""

    @extend_schema(operation_id="memory_update", tags=["memory"], request=UpdateMemoryRequest, responses={200: NULL})
    def patch(self, request: Request, app_name: str, user_id: str) -> JsonResponse:
        try:
            body = UpdateMemoryRequest.model_validate_json(request._request.body or b"{}")
        except ValidationError:
            return _detail("Update memory request is invalid.", 400)
        try:
            limits.check_id(body.session_id, "sessionId")
        except limits.InputError as exc:
            return JsonResponse({exc.field: [exc.message]}, status=400)
        session = DjangoSessionService().get_session_sync(app_name=app_name, user_id=user_id, session_id=body.session_id)
        if session is None:
            return _detail("Session not found", 404)
        DjangoMemoryService().add_session_to_memory_sync(session)
        return _json(None)
