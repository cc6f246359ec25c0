"""REST API: ADK's api-server routes in ADK's camelCase JSON, plus what ADK lacks.

Sessions, events and runs take and return ADK's own pydantic models, dumped as
ADK's server dumps them (`by_alias`, no nulls, internal metadata and credential
secrets removed), so ADK clients work unchanged. Errors are JSON
`{"detail": ...}` (404 unknown app, session or invocation; 409 conflicts) or
DRF's `{field: [messages]}` for invalid input (400).

An app is known when the agents directory has it or sessions are stored for it
(an ADK Runner elsewhere can write through `DjangoSessionService`).
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, TypeVar

import pydantic
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.http import StreamingHttpResponse
from django.templatetags.static import static
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_serializer
from drf_spectacular.views import SpectacularSwaggerView
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events._internal_metadata import mark_restored
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session as AdkSession
from google.adk.utils._function_call_names import CLIENT_FUNCTION_CALL_NAMES
from google.genai import types
from pydantic.alias_generators import to_camel
from pydantic.json_schema import model_json_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adkui import agents
from adkui.adk import DjangoSessionService

from . import selectors, services
from .models import App, Event, Session
from .runs import RunRequest, adk_json, run_agent, sse_stream, stop_run
from .scopes import UnstorableValueError
from .services import SessionKey

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
    if isinstance(exc, SessionNotFoundError):
        return NotFound(str(exc))
    if isinstance(exc, (AlreadyExistsError, StaleSessionError)):
        return Conflict(str(exc))
    if isinstance(exc, UnstorableValueError):
        return BadRequest(str(exc))
    return exc


class AdkApi(APIView):
    """Base of every API here: JSON in, domain errors mapped to HTTP errors."""

    parser_classes = [JSONParser]

    def handle_exception(self, exc: Exception) -> Response:
        return super().handle_exception(_api_exception(exc))


def _require_app(app_name: str) -> None:
    if app_name not in agents.agent_names() and not App.objects.filter(name=app_name).exists():
        raise NotFound(f"App {app_name!r} not found.")


def _require_session(key: SessionKey) -> Session:
    _require_app(key.app_name)
    row = selectors.session_find(**key.__dict__)
    if row is None:
        raise NotFound(f"Session {key.session_id!r} of user {key.user_id!r} in app {key.app_name!r} not found.")
    return row


def _require_agent(app_name: str) -> None:
    """Runs need the agent itself, not just stored sessions."""
    try:
        loaded = agents.load(app_name)
    except agents.AgentNotFound as exc:
        raise NotFound(str(exc)) from exc
    if not loaded.ok:
        raise APIException(f"Agent {app_name!r} failed to load: {loaded.error.strip().splitlines()[-1]}")


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."


def _check_size(request: Request) -> None:
    limit = settings.ADKUI_MAX_EVENT_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise PayloadTooLarge(f"An event may be at most {limit} bytes of JSON; this one is {length}.")


M = TypeVar("M", bound=pydantic.BaseModel)


def validate_adk(model: type[M], data: Any) -> M:
    """`data` as an ADK model, or a 400 naming the fields at fault.

    Some of google-genai's own validators fail on odd input with plain
    ValueError/TypeError/AttributeError rather than a ValidationError; that is
    bad input all the same, never a server error.
    """
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError(_pydantic_errors(exc)) from exc
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ValidationError({"non_field_errors": [f"Not a valid {model.__name__}: {exc}"]}) from exc


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


@extend_schema_field(OpenApiTypes.OBJECT)
class AdkModelField(serializers.Field):
    """A JSON object validated by an ADK (pydantic) model, with its errors by field path."""

    def __init__(self, model: type[pydantic.BaseModel], **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> pydantic.BaseModel:
        return validate_adk(self.model, data)

    def to_representation(self, value: pydantic.BaseModel) -> Any:
        return value.model_dump(exclude_none=True, by_alias=True, mode="json")


def _validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# ---- OpenAPI: ADK's models are the schema -----------------------------------------


class AdkSessionList(pydantic.RootModel[list[AdkSession]]):
    """Schema only: a JSON array of ADK sessions."""


class AdkEventList(pydantic.RootModel[list[AdkEvent]]):
    """Schema only: a JSON array of ADK events."""


_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SCHEMA_ONES = ("items", "additionalProperties", "not")


def openapi_30(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic (JSON Schema 2020-12) schema in OpenAPI 3.0's dialect: `nullable`
    for `anyOf [X, null]`, `enum` for `const`, one `example` for `examples`."""
    s = dict(schema)
    for key in _SCHEMA_MAPS:
        if key in s:
            s[key] = {name: openapi_30(sub) for name, sub in s[key].items()}
    for key in _SCHEMA_LISTS:
        if key in s:
            s[key] = [openapi_30(sub) for sub in s[key]]
    for key in _SCHEMA_ONES:
        if isinstance(s.get(key), dict):
            s[key] = openapi_30(s[key])
    if "const" in s:
        s["enum"] = [s.pop("const")]
    if "examples" in s:
        examples = s.pop("examples")
        if examples:
            s["example"] = examples[0]
    options = s.get("anyOf")
    if options and any(o.get("type") == "null" for o in options):
        rest = [o for o in options if o.get("type") != "null"]
        s["nullable"] = True
        if len(rest) == 1:
            del s["anyOf"]
            # A $ref takes no sibling keys in 3.0, so wrap it.
            s = {**({"allOf": rest} if "$ref" in rest[0] else rest[0]), **s}
        else:
            s["anyOf"] = rest
    return s


class AdkModelExtension(PydanticExtension):
    """drf-spectacular's pydantic support, made valid for its default OpenAPI 3.0."""

    priority = 1

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema = model_json_schema(self.target, ref_template="#/components/schemas/{model}", mode="serialization")
        if spectacular_settings.OAS_VERSION.startswith("3.0"):
            schema = openapi_30(schema)
        for name, sub_schema in schema.pop("$defs", {}).items():
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub_schema)
            auto_schema.registry.register_on_missing(component)
        return schema


# ---- apps ----------------------------------------------------------------------


class AppListApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        detailed = serializers.BooleanField(default=False)

    @extend_schema_serializer(component_name="AppInfo")
    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        rootAgentName = serializers.CharField()
        description = serializers.CharField()
        language = serializers.CharField()
        isComputerUse = serializers.BooleanField()

    @extend_schema(
        operation_id="app_list", tags=["apps"], parameters=[InputSerializer],
        responses={200: OpenApiResponse(OpenApiTypes.ANY, description="App names, or `{apps: [...]}` when detailed.")},
    )
    def get(self, request: Request) -> Response:
        """Names of the agents in the agents directory, as `adk api_server` lists them."""
        if not _validated(self.InputSerializer, request.query_params)["detailed"]:
            return Response(agents.agent_names())
        apps = [
            {"name": a["name"], "rootAgentName": a["root_agent_name"], "description": a["description"],
             "language": a["language"], "isComputerUse": a["is_computer_use"]}
            for a in agents.loader().list_agents_detailed()
        ]
        return Response({"apps": self.OutputSerializer(apps, many=True).data})


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
        raise ValidationError({"events": [f"Session initialization event {index} cannot include {claim}."]})


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


class SessionListApi(AdkApi):
    @extend_schema(operation_id="session_list", tags=["sessions"], responses={200: AdkSessionList})
    def get(self, request: Request, app_name: str, user_id: str) -> Response:
        """The user's sessions of this app, without their events (ADK leaves out eval sessions)."""
        _require_app(app_name)
        sessions = _service().list_sessions_sync(app_name=app_name, user_id=user_id).sessions
        return Response([adk_json(s) for s in sessions if not s.id.startswith(EVAL_SESSION_PREFIXES)])


class SessionCreateApi(AdkApi):
    @extend_schema_serializer(component_name="CreateSessionRequest")
    class InputSerializer(AdkBodySerializer):
        sessionId = serializers.CharField(source="session_id", required=False, allow_null=True, allow_blank=True)
        state = serializers.DictField(required=False, allow_null=True)
        events = serializers.ListField(child=AdkModelField(AdkEvent), required=False, allow_null=True)
        options = serializers.DictField(required=False, allow_null=True)

        def validate_options(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value:
                raise ValidationError("Session options are not supported by the configured session service.")
            return value

    @extend_schema(operation_id="session_create", tags=["sessions"], request=InputSerializer, responses={200: AdkSession})
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
        request={"application/json": OpenApiTypes.OBJECT}, responses={200: AdkSession},
    )
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Create a session with this id; the body is its initial state. Deprecated by ADK."""
        state = request.data if request.data is not None else {}
        if not isinstance(state, dict):
            raise ValidationError({"state": ["Expected a JSON object of state keys."]})
        return Response(adk_json(_create_session(SessionKey(app_name, user_id, session_id), state, [])))


class SessionGetApi(AdkApi):
    @extend_schema(operation_id="session_get", tags=["sessions"], responses={200: AdkSession})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """The session with its state and every event."""
        return Response(adk_json(_adk_session(SessionKey(app_name, user_id, session_id))))


class SessionUpdateApi(AdkApi):
    @extend_schema_serializer(component_name="UpdateSessionRequest")
    class InputSerializer(AdkBodySerializer):
        stateDelta = serializers.DictField(source="state_delta")

    @extend_schema(operation_id="session_update", tags=["sessions"], request=InputSerializer, responses={200: AdkSession})
    def patch(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Change state without running the agent: ADK appends the delta as a `user` event."""
        delta = _validated(self.InputSerializer, request.data)["state_delta"]
        session = _adk_session(SessionKey(app_name, user_id, session_id))
        # The event ADK's own PATCH builds: a "p-" invocation id marks it as a patch.
        event = AdkEvent(invocation_id=f"p-{uuid.uuid4()}", author="user", actions=EventActions(state_delta=delta))
        _service().append_event_sync(session, event)
        return Response(adk_json(session))


class SessionDeleteApi(AdkApi):
    @extend_schema(
        operation_id="session_delete", tags=["sessions"],
        responses={200: OpenApiResponse(description="Deleted; the body is `null`, as from ADK's server.")},
    )
    def delete(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Delete the session and its events; `app:` and `user:` state stay."""
        key = SessionKey(app_name, user_id, session_id)
        _require_session(key)
        services.session_delete(key=key)
        return Response(None)


# ---- events and state (not in ADK's server) ------------------------------------


def _event_page(session: Session, *, after_seq: int, limit: int) -> list[tuple[int, AdkEvent]]:
    """Up to `limit` events after `after_seq`, oldest first, each with its sequence number."""
    rows = (
        Event.objects.filter(session=session, seq__gt=after_seq)
        .order_by("seq")
        .values_list("seq", Cast("data", TextField()))[:limit]
    )
    return [(seq, AdkEvent.model_validate_json(data)) for seq, data in rows]


def _event_json(seq: int | None, event: AdkEvent) -> dict[str, Any]:
    return {**adk_json(event), "seq": seq}


class EventListApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        after_seq = serializers.IntegerField(min_value=0, default=0)
        limit = serializers.IntegerField(min_value=1, max_value=EVENTS_PAGE_MAX, default=100)

    @extend_schema_serializer(component_name="EventPage")
    class OutputSerializer(serializers.Serializer):
        events = serializers.ListField(child=serializers.DictField(), help_text="ADK events, each with its `seq`.")
        nextAfterSeq = serializers.IntegerField(allow_null=True, help_text="`after_seq` of the next page; null on the last.")
        lastSeq = serializers.IntegerField(help_text="Sequence number of the newest stored event (0: none).")

    @extend_schema(operation_id="event_list", tags=["events"], parameters=[InputSerializer], responses={200: OutputSerializer})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """A page of the session's events in append order.

        Every stored event has a sequence number `seq` (1, 2, ... in append
        order, never reused within the session). Ask for `after_seq=0` first,
        then pass each page's `nextAfterSeq` until it is null. To follow a
        live session, poll with `after_seq=lastSeq`. Each event is ADK's JSON
        plus `"seq"` (ADK's model ignores the extra key).
        """
        query = _validated(self.InputSerializer, request.query_params)
        row = _require_session(SessionKey(app_name, user_id, session_id))
        page = _event_page(row, after_seq=query["after_seq"], limit=query["limit"])
        last_returned = page[-1][0] if page else query["after_seq"]
        output = {
            "events": [_event_json(seq, event) for seq, event in page],
            "nextAfterSeq": last_returned if last_returned < row.revision else None,
            "lastSeq": row.revision,
        }
        return Response(self.OutputSerializer(output).data)


class EventCreateApi(AdkApi):
    @extend_schema(
        operation_id="event_create", tags=["events"], request=AdkEvent,
        responses={
            201: OpenApiResponse(AdkEvent, description="Stored: the event as stored, with its `seq`."),
            200: OpenApiResponse(AdkEvent, description="A partial event: accepted, not stored (`seq` null), as in ADK."),
        },
    )
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Append one ADK Event (JSON, camelCase or snake_case) written by any process.

        It is validated with ADK's own `Event` model and stored through the
        same path as a Runner's events: its state delta applies to the app,
        user and session scopes, `temp:` keys are dropped. An event whose id
        is already stored in the session is refused (409), so a retry is safe.
        A body over ADKUI_MAX_EVENT_BYTES is refused (413) before it is parsed.
        """
        _check_size(request)
        event = validate_adk(AdkEvent, request.data)
        key = SessionKey(app_name, user_id, session_id)
        row = _require_session(key)
        if event.partial:
            return Response(_event_json(None, event), status=status.HTTP_200_OK)
        stored = Event.objects.filter(session=row, event_id=event.id).values_list("seq", flat=True).first()
        if stored is not None:
            raise Conflict(f"Event {event.id!r} is already stored as #{stored}.")
        # event_append drops `temp:` keys, as ADK's services do. A foreign
        # writer has no session copy to be stale against: no revision check.
        appended = services.event_append(key=key, event=event)
        return Response(_event_json(appended.seq, event), status=status.HTTP_201_CREATED)


class StateGetApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        seq = serializers.IntegerField(min_value=0, required=False, help_text="0: right after creation; omit: now.")

    @extend_schema_serializer(component_name="StateAsOf")
    class OutputSerializer(serializers.Serializer):
        seq = serializers.IntegerField()
        state = serializers.DictField(help_text="Merged, as ADK shows it: session keys, `app:` and `user:` keys.")
        app = serializers.DictField(help_text="`app:` scope, keys without the prefix.")
        user = serializers.DictField(help_text="`user:` scope, keys without the prefix.")
        session = serializers.DictField(help_text="Session scope.")

    @extend_schema(operation_id="state_get", tags=["events"], parameters=[InputSerializer], responses={200: OutputSerializer})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """State of every scope right after event `seq` (time travel), or now."""
        seq = _validated(self.InputSerializer, request.query_params).get("seq")
        row = _require_session(SessionKey(app_name, user_id, session_id))
        if seq is None:
            seq, state = row.revision, selectors.current_state(row)
        else:
            try:
                state = selectors.state_as_of(row, seq)
            except Event.DoesNotExist as exc:
                raise NotFound(str(exc)) from exc
        output = {"seq": seq, "state": state.merged(), "app": state.app, "user": state.user, "session": state.session}
        return Response(self.OutputSerializer(output).data)


# ---- runs ----------------------------------------------------------------------


@extend_schema_serializer(component_name="RunAgentRequest")
class RunInputSerializer(AdkBodySerializer):
    """ADK's `RunAgentRequest`."""

    appName = serializers.CharField(source="app_name")
    userId = serializers.CharField(source="user_id")
    sessionId = serializers.CharField(source="session_id")
    newMessage = AdkModelField(types.Content, source="new_message", required=False, allow_null=True)
    streaming = serializers.BooleanField(default=False)
    stateDelta = serializers.DictField(source="state_delta", required=False, allow_null=True)
    invocationId = serializers.CharField(
        source="invocation_id", required=False, allow_null=True, allow_blank=True,
        help_text="Resume this (interrupted) invocation; no newMessage needed.",
    )
    customMetadata = serializers.DictField(source="custom_metadata", required=False, allow_null=True)
    # Accepted as ADK accepts it; ADK only uses it for frames of artifact events.
    functionCallEventId = serializers.CharField(required=False, allow_null=True, allow_blank=True)


def _run_request(data: Any, *, streaming: bool) -> RunRequest:
    """Validate a run before it starts: a stream, once begun, cannot turn into a 404."""
    body = _validated(RunInputSerializer, data)
    key = SessionKey(body["app_name"], body["user_id"], body["session_id"])
    row = _require_session(key)  # another user's session is simply not found
    _require_agent(key.app_name)
    message, invocation_id = body.get("new_message"), body.get("invocation_id") or None
    if message is None and invocation_id is None:
        raise ValidationError({"newMessage": ["Give a newMessage, or an invocationId to resume."]})
    if message is None and not Event.objects.filter(session=row, invocation_id=invocation_id).exists():
        raise NotFound(f"Invocation {invocation_id!r} not found in session {key.session_id!r}.")
    return RunRequest(
        key=key, new_message=message, state_delta=body.get("state_delta"), invocation_id=invocation_id,
        streaming=streaming and body["streaming"], custom_metadata=body.get("custom_metadata"),
    )


async def _collect(request: RunRequest) -> list[AdkEvent]:
    return [event async for event in run_agent(request)]


class RunApi(AdkApi):
    InputSerializer = RunInputSerializer

    @extend_schema(operation_id="run", tags=["runs"], request=InputSerializer, responses={200: AdkEventList})
    def post(self, request: Request) -> Response:
        """Run the agent for one turn and return its events (ADK's `/run`).

        Where ADK's server answers 500 for an exception in the agent, the
        list ends with the stored error event recording it (ADK's own, its
        `errorCode` the exception's name, or ours, "AGENT_ERROR").
        """
        run = _run_request(request.data, streaming=False)
        return Response([adk_json(event) for event in async_to_sync(_collect)(run)])


class _AnyAccept(BaseContentNegotiation):
    """EventSource clients send `Accept: text/event-stream`; errors still go out as JSON."""

    def select_parser(self, request: Request, parsers: list[BaseParser]) -> BaseParser | None:
        return parsers[0] if parsers else None

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class RunSseApi(AdkApi):
    InputSerializer = RunInputSerializer
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="run_sse", tags=["runs"], request=InputSerializer,
        responses={(200, "text/event-stream"): OpenApiResponse(
            OpenApiTypes.STR,
            description="text/event-stream: one `data: <ADK event JSON>` frame per event; with streaming true, "
            "partial token chunks too. An exception in the agent sends its stored error event, then "
            'ADK\'s `data: {"error": ..., "error_details": ...}` frame, and the stream ends.',
        )},
    )
    def post(self, request: Request) -> StreamingHttpResponse:
        """Run the agent for one turn, streaming its events as Server-Sent Events (ADK's `/run_sse`).

        Closing the connection stops the run; ADK seals the invocation, which
        can be resumed with its `invocationId`.
        """
        run = _run_request(request.data, streaming=True)
        response = StreamingHttpResponse(sse_stream(run), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a buffering proxy would hold every frame back
        return response


class RunStopApi(AdkApi):
    @extend_schema_serializer(component_name="RunStop")
    class OutputSerializer(serializers.Serializer):
        stopped = serializers.IntegerField(help_text="How many runs of the session this process was asked to stop.")

    @extend_schema(operation_id="run_stop", tags=["runs"], request=None, responses={200: OutputSerializer})
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Stop the session's running invocations in this server process (not in ADK's server).

        ADK stores abort events sealing each invocation; resume it with
        `invocationId`. With several worker processes only the runs of the
        process answering this request are stopped.
        """
        key = SessionKey(app_name, user_id, session_id)
        _require_session(key)
        return Response(self.OutputSerializer({"stopped": stop_run(key)}).data)


# ---- docs ----------------------------------------------------------------------


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI from drf-spectacular-sidecar's bundled copy, never a CDN (the network may be closed)."""

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"drf_spectacular_sidecar/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static("drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png")
