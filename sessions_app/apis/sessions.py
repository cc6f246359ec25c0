"""Apps and sessions: ADK's own routes."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from google.adk.cli.api_server import UpdateSessionRequest
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events import Event as AdkEvent
from google.adk.events import EventActions
from google.adk.sessions import Session as AdkSession
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from access.fields import StrictCharField
from access.limits import InputError, check_state_size
from adk_compat import CLIENT_FUNCTION_CALL_NAMES, mark_restored

from .. import page_tokens, selectors, services
from ..wire import adk_json
from ..keys import SessionKey
from .base import (
    AdkApi,
    AdkBodySerializer,
    AdkModelField,
    AdkSessionList,
    BadRequest,
    Conflict,
    KeysetPageQuery,
    EVAL_SESSION_PREFIXES,
    _adk_session,
    _require_app,
    _require_session,
    _service,
    _validated,
)
from .schema import errors


# ---- sessions ------------------------------------------------------------------


def _check_initial_events(events: list[AdkEvent]) -> None:
    """Refuse events claiming to be ADK's own, as ADK's server does on session create."""
    for index, event in enumerate(events):
        names = [c.name for c in event.get_function_calls()] + [r.name for r in event.get_function_responses()]
        if event.long_running_tool_ids:
            claim = "long-running tool IDs"
        elif event.actions != EventActions():
            claim = "event actions"
        elif any(name in CLIENT_FUNCTION_CALL_NAMES for name in names):
            claim = "ADK protocol function calls"
        else:
            continue
        # ADK's server refuses the import with its `detail` (adk-web shows it), not a field error.
        raise BadRequest(f"Session initialization event {index} cannot include {claim}.")


def _capped_state(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """State (a new session's, or a delta) within ADKUI_MAX_STATE_BYTES of JSON."""
    try:
        check_state_size(value, "state")
    except InputError as exc:
        raise ValidationError(f"State {exc.message}") from exc
    return value


def _create_session(
    key: SessionKey, state: dict[str, Any] | None, events: list[AdkEvent]
) -> AdkSession:
    _require_app(key.app_name)
    service = _service()
    with transaction.atomic():  # a session whose initial events fail is not left behind
        try:
            session = service.create_session_sync(
                app_name=key.app_name, user_id=key.user_id, session_id=key.session_id or None, state=state
            )
        except AlreadyExistsError as exc:
            raise Conflict(f"Session already exists: {key.session_id}") from exc
        for event in events:
            service.append_event_sync(session, mark_restored(event))
    return session


NEXT_PAGE_HEADER = page_tokens.NEXT_PAGE_HEADER
SESSIONS_PAGE_MAX = 1000


def _page_token(position: selectors.SessionPosition) -> str:
    return page_tokens.encode(position)


def _page_position(token: str) -> selectors.SessionPosition:
    """The position a `page_token` names; a 400 naming the field for anything we did not issue."""
    try:
        update_time, user_id, session_id = page_tokens.decode(token)
        if not isinstance(update_time, (int, float)) or not all(isinstance(v, str) for v in (user_id, session_id)):
            raise ValueError(token)
    except ValueError as exc:
        raise ValidationError({"page_token": ["Not a page token from this list; pass the last page's "
                                              f"{NEXT_PAGE_HEADER} header as it came."]}) from exc
    return selectors.SessionPosition(float(update_time), user_id, session_id)


@extend_schema_field({
    "type": "object", "maxProperties": 0,
    "description": "ADK's server forwards these to the session service's create_session as keyword arguments; "
                   "DjangoSessionService takes none, so only an empty object (or null) is accepted, as ADK's "
                   "server answers with this service.",
})
class NoOptionsField(serializers.DictField):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        if value:
            raise ValidationError("Session options are not supported by the configured session service.")
        return value


class SessionListApi(AdkApi):
    class QuerySerializer(KeysetPageQuery):
        include_eval = serializers.BooleanField(
            default=False,
            help_text="Also list eval sessions: those of this app's eval-run sandboxes (`app@eval-<run>-<case>-<repeat>`, "
                      "their `appName` says which) and ADK's own eval sessions. Left out by default, as ADK does.",
        )
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=SESSIONS_PAGE_MAX,
            help_text="Page the list: at most this many sessions, in ADK's order (oldest update first). The response "
                      f"stays ADK's JSON array; its `{NEXT_PAGE_HEADER}` header, when present, is the `page_token` of "
                      "the next page (keyset paging: every page costs the same however deep). Without it, every "
                      "session, as ADK's server returns them. Not with `include_eval`.",
        )
        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            attrs = super().validate(attrs)
            if "page_size" in attrs and attrs["include_eval"]:
                raise ValidationError({"page_size": ["Pages cover the app's own sessions: not with include_eval."]})
            return attrs

    @extend_schema(
        operation_id="session_list", tags=["sessions"],
        parameters=[QuerySerializer, OpenApiParameter(
            NEXT_PAGE_HEADER, str, OpenApiParameter.HEADER, response=[200],
            description="With `page_size`: the `page_token` of the next page; absent on the last page.",
        )],
        responses={200: AdkSessionList},
    )
    def get(self, request: Request, app_name: str, user_id: str) -> Response:
        """The user's sessions of this app, without their events. Eval sessions are left out, as
        ADK leaves them out, unless `?include_eval=true`. `page_size` pages the list (keyset)."""
        query = _validated(self.QuerySerializer, request.query_params)
        _require_app(app_name)
        service = _service()
        if "page_size" in query:
            return self._page(service, app_name, user_id, query)
        sessions = service.list_sessions_sync(app_name=app_name, user_id=user_id).sessions
        if not query["include_eval"]:
            return Response([adk_json(s) for s in sessions if not s.id.startswith(EVAL_SESSION_PREFIXES)])
        for sandbox in selectors.sandbox_app_names(app_name, user_id=user_id):
            sessions += service.list_sessions_sync(app_name=sandbox, user_id=user_id).sessions
        return Response([adk_json(s) for s in sessions])

    def _page(self, service: Any, app_name: str, user_id: str, query: dict[str, Any]) -> Response:
        after = _page_position(query["page_token"]) if "page_token" in query else None
        sessions, position = service.list_sessions_page_sync(
            app_name=app_name, user_id=user_id, page_size=query["page_size"], after=after
        )
        # ADK's eval sessions are left out as above, so a page may hold fewer than page_size.
        response = Response([adk_json(s) for s in sessions if not s.id.startswith(EVAL_SESSION_PREFIXES)])
        if position is not None:
            response[NEXT_PAGE_HEADER] = _page_token(position)
        return response


class SessionCreateApi(AdkApi):
    @extend_schema_serializer(component_name="CreateSessionRequest")
    class InputSerializer(AdkBodySerializer):
        sessionId = StrictCharField(source="session_id", required=False, allow_null=True, allow_blank=True)
        state = serializers.DictField(required=False, allow_null=True)
        events = serializers.ListField(child=AdkModelField(AdkEvent), required=False, allow_null=True)
        options = NoOptionsField(required=False, allow_null=True)

        def validate_state(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
            return _capped_state(value)

        def validate_events(self, value: list[AdkEvent] | None) -> list[AdkEvent] | None:
            limit = settings.ADKUI_MAX_INITIAL_EVENTS
            if value and len(value) > limit:
                raise ValidationError(f"A new session takes at most {limit} initial events; this one has {len(value)}.")
            return value

    @extend_schema(operation_id="session_create", tags=["sessions"], request=InputSerializer,
                   responses={200: AdkSession, **errors(409)})
    def post(self, request: Request, app_name: str, user_id: str) -> Response:
        """Create a session, with a chosen id, initial state and restored events if given."""
        data = _validated(self.InputSerializer, request.data if request.data is not None else {})
        events = data.get("events") or []
        _check_initial_events(events)
        key = SessionKey(app_name, user_id, data.get("session_id") or "")
        return Response(adk_json(_create_session(key, data.get("state"), events)))


class SessionCreateWithIdApi(AdkApi):
    @extend_schema(
        operation_id="session_create_with_id", tags=["sessions"], deprecated=True,
        request={"application/json": OpenApiTypes.OBJECT}, responses={200: AdkSession, **errors(409)},
    )
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Create a session with this id; the body is its initial state. Deprecated by ADK."""
        state = request.data if request.data is not None else {}
        if not isinstance(state, dict):
            raise ValidationError({"state": ["Expected a JSON object of state keys."]})
        try:
            _capped_state(state)
        except ValidationError as exc:
            raise ValidationError({"state": exc.detail}) from exc
        return Response(adk_json(_create_session(SessionKey(app_name, user_id, session_id), state, [])))


class SessionGetApi(AdkApi):
    @extend_schema(operation_id="session_get", tags=["sessions"], responses={200: AdkSession})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """The session with its state and every event."""
        return Response(adk_json(_adk_session(SessionKey(app_name, user_id, session_id))))


class SessionUpdateApi(AdkApi):
    class InputSerializer(AdkBodySerializer):
        stateDelta = serializers.DictField(source="state_delta")

        def validate_stateDelta(self, value: dict[str, Any]) -> dict[str, Any]:  # noqa: N802 (ADK's field name)
            return _capped_state(value)

    # ADK's own model, as its server takes it: stateDelta is required (drf-spectacular would
    # document a serializer's fields as optional on a PATCH).
    @extend_schema(
        operation_id="session_update", tags=["sessions"], request=UpdateSessionRequest, responses={200: AdkSession, **errors(409)},
    )
    def patch(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Change state without running the agent: ADK appends the delta as a `user` event."""
        delta = _validated(self.InputSerializer, request.data)["state_delta"]
        session = _adk_session(SessionKey(app_name, user_id, session_id))
        _service().append_event_sync(session, services.state_update_event(delta))
        return Response(adk_json(session))


class SessionDeleteApi(AdkApi):
    @extend_schema(
        operation_id="session_delete", tags=["sessions"],
        responses={200: OpenApiResponse({"type": "null"}, description="Deleted; the body is `null`, as from ADK's server.")},
    )
    def delete(self, request: Request, app_name: str, user_id: str, session_id: str) -> JsonResponse:
        """Delete the session and its events; `app:` and `user:` state stay."""
        key = SessionKey(app_name, user_id, session_id)
        _require_session(key)
        services.session_delete(key=key)
        return JsonResponse(None, safe=False)  # JSON `null`, as ADK's server sends (DRF's Response(None) is empty)
