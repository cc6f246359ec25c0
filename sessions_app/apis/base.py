"""Shared pieces of the API: errors, lookups, ADK's wire form, input, OpenAPI.

See the package docstring for the API as a whole.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import pydantic
from django.conf import settings
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.session import Session as AdkSession
from pydantic.alias_generators import to_camel
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from access.fields import json_kind
from access.limits import InputError, TooLargeError, check_id, check_state_size
from access.parsers import LimitedJSONParser

from .. import runtime, selectors
from ..keys import SessionKey
from ..models import Session
from ..page_tokens import NEXT_PAGE_HEADER
from ..scopes import UnstorableValueError, split_delta
from ..session_service import DjangoSessionService
from .schema import AdkModelFieldExtension, AdkPydanticExtension  # noqa: F401 (drf-spectacular uses them once imported)


# Sessions ADK's evaluator creates; ADK's server leaves them out of listings.
EVAL_SESSION_PREFIXES = ("adk-eval-session-", "___eval___session___")
EVENTS_PAGE_MAX = 1000


# ---- errors, lookups and ADK's wire form ---------------------------------------


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "Conflict."


class BadRequest(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "Bad request."


def _api_exception(exc: Exception) -> Exception:
    """ADK's and our domain errors as the HTTP errors ADK's server answers with."""
    if isinstance(exc, TooLargeError):
        return PayloadTooLarge({exc.field: [exc.message]})
    if isinstance(exc, InputError):
        return ValidationError({exc.field: [exc.message]})
    if isinstance(exc, SessionNotFoundError):
        return NotFound(str(exc))
    if isinstance(exc, (AlreadyExistsError, StaleSessionError)):
        return Conflict(str(exc))
    if isinstance(exc, UnstorableValueError):
        return BadRequest(str(exc))
    return exc


class KeysetPageQuery(serializers.Serializer):
    """The `page_token` of a keyset-paged list (`page_tokens`); each list adds its own `page_size`."""

    page_token = serializers.CharField(
        required=False, help_text=f"The `{NEXT_PAGE_HEADER}` header of the previous page (needs `page_size`)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "page_token" in attrs and "page_size" not in attrs:
            raise ValidationError({"page_token": ["Needs page_size (the size of the pages it continues)."]})
        return attrs


class AdkApi(APIView):
    """Base of every API here: JSON in, domain errors mapped to HTTP errors."""

    parser_classes = [LimitedJSONParser]

    def handle_exception(self, exc: Exception) -> Response:
        return super().handle_exception(_api_exception(exc))


def _require_app(app_name: str) -> None:
    if app_name not in runtime.agent_names() and not selectors.app_known(app_name):
        raise NotFound(f"App {app_name!r} not found.")


def _require_session(key: SessionKey) -> Session:
    _require_app(key.app_name)
    row = selectors.session_find(**key.__dict__)
    if row is None:
        raise NotFound(f"Session {key.session_id!r} of user {key.user_id!r} in app {key.app_name!r} not found.")
    return row


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."


def _check_size(request: Request) -> None:
    """The event body: present, and within ADKUI_MAX_EVENT_BYTES (counted, not taken from a header)."""
    limit = settings.ADKUI_MAX_EVENT_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise PayloadTooLarge(f"An event may be at most {limit} bytes of JSON; this one is {length}.")
    require_body(request)


def require_body(request: Request) -> None:
    """A route whose body is the whole request refuses an empty one (DRF reads it as `{}`)."""
    if not request.body.strip():
        raise ValidationError({"body": ["A JSON body is required."]})


M = TypeVar("M", bound=pydantic.BaseModel)


def validate_adk(model: type[M], data: Any) -> M:
    """`data` as an ADK model, or a 400 naming the fields at fault.

    Some of google-genai's own validators fail on odd input with plain
    ValueError/TypeError/AttributeError rather than a ValidationError; that is
    bad input all the same, never a server error.
    """
    try:
        value = model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError(_pydantic_errors(exc)) from exc
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ValidationError({"non_field_errors": [f"Not a valid {model.__name__}: {exc}"]}) from exc
    if converted := _converted(model, data):
        raise ValidationError(converted)
    return value


# Pydantic's lax mode converts these (`true` to 1.0, "12" to 12, 1.5 to "int"); its strict mode names them.
_CONVERSIONS = {"string_type", "float_type", "int_type", "int_from_float", "bool_type"}


def _converted(model: type[pydantic.BaseModel], data: Any) -> dict[str, list[str]]:
    """Fields whose JSON value has another type than the schema's, which ADK's model would quietly convert.

    Only scalar conversions count: strict mode also wants enum members and sets where
    JSON has text and arrays, which are no conversion of the client's value. A float
    with no fraction is an integer to JSON Schema, so it stays one.
    """
    try:
        model.model_validate(data, strict=True)
    except pydantic.ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            value = error.get("input")
            if error["type"] not in _CONVERSIONS or (isinstance(value, float) and value.is_integer()
                                                      and error["type"] in ("int_type", "int_from_float")):
                continue
            path = ".".join(str(part) for part in error["loc"]) or "non_field_errors"
            errors.setdefault(path, []).append(f"{error['msg']}; got {json_kind(value)}, which is not converted.")
        return errors
    except (ValueError, TypeError, AttributeError, KeyError):
        pass  # the lax validation took it; a validator that trips on strict input is no type mismatch
    return {}


def _pydantic_errors(exc: pydantic.ValidationError) -> dict[str, list[str]]:
    """Pydantic's errors keyed by field path (`content.parts.0.text`), as DRF keys its own."""
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        path = ".".join(str(part) for part in error["loc"]) or "non_field_errors"
        errors.setdefault(path, []).append(error["msg"])
    return errors


def _service() -> DjangoSessionService:
    return DjangoSessionService()


def _adk_session(key: SessionKey) -> AdkSession:
    """The whole session (state and every event), as ADK's service returns it."""
    _require_app(key.app_name)
    session = _service().get_session_sync(**key.__dict__)
    if session is None:
        _require_session(key)  # raises the 404 with its message
    return session


# ---- input in ADK's shape ------------------------------------------------------


class AdkBodySerializer(serializers.Serializer):
    """A request body in ADK's camelCase; snake_case keys work too, as in ADK's pydantic models."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = {to_camel(key) if "_" in key else key: value for key, value in data.items()}
        return super().to_internal_value(data)


class AdkModelField(serializers.Field):
    """A JSON object validated by an ADK (pydantic) model, with its errors by field path (its schema: that model's,
    by `AdkModelFieldExtension`)."""

    def __init__(self, model: type[pydantic.BaseModel], **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> pydantic.BaseModel:
        return validate_adk(self.model, data)

    def to_representation(self, value: pydantic.BaseModel) -> Any:
        return value.model_dump(exclude_none=True, by_alias=True, mode="json")


def checked_state_delta(value: dict[str, Any] | None, field: str) -> dict[str, Any] | None:
    """A delta a run will apply, refused before the run starts as the one write path would refuse
    it inside the run (where it became an AGENT_ERROR event): every key, without its `app:`/`user:`
    prefix, a non-empty id, and the whole within ADKUI_MAX_STATE_BYTES (413)."""
    check_state_size(value, field)
    for scope, values in split_delta(value or {}).items():
        for key in values:
            check_id(key, f"{field} key")
    return value


def _validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# ---- OpenAPI: ADK's models are the schema (drf-spectacular's pydantic support, OpenAPI 3.1) ----


class AdkSessionList(pydantic.RootModel[list[AdkSession]]):
    """Schema only: a JSON array of ADK sessions."""


class AdkEventList(pydantic.RootModel[list[AdkEvent]]):
    """Schema only: a JSON array of ADK events."""
