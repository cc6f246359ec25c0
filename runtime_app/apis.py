"""The API routes that need the agent itself: list-apps, `/run`, `/run_sse`, stop, app-info and
the agent graphs; ADK's version, health and telemetry-consent routes; and the docs page."""
from __future__ import annotations

import sys
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from django.templatetags.static import static
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer, inline_serializer
from drf_spectacular.views import SpectacularSwaggerView
from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App as AdkApp
from google.adk.cli.agent_graph import get_agent_graph
from google.adk.cli.api_server import AppInfo, ListAppsResponse
from google.adk.cli.dev_server import GetEventGraphResult, TelemetryConsentRequest
from google.adk.cli.utils.graph_serialization import serialize_app_info
from google.adk.cli.utils.graph_visualization import plot_workflow_graph
from google.adk.events import Event as AdkEvent
from google.adk.utils.agent_info import get_agents_dict
from google.genai import types
from pydantic import RootModel
from rest_framework import serializers
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from access.fields import NON_BLANK, StrictBooleanField, StrictCharField
from access.roles import reads
from sessions_app import selectors
from sessions_app.apis.schema import ApiError, errors
from sessions_app.apis.base import (
    AdkApi,
    AdkBodySerializer,
    AdkEventList,
    AdkModelField,
    BadRequest,
    _require_session,
    _validated,
    checked_state_delta,
    validate_adk,
)
from sessions_app.keys import SessionKey
from sessions_app.models import Event as EventRow
from sessions_app.sandbox import real_app_name
from sessions_app.wire import adk_json

from . import agents
from .runs import RunRequest, run_agent, sse_stream, stop_run


def _require_agent(app_name: str) -> None:
    """Runs need the agent itself, not just stored sessions."""
    try:
        loaded = agents.load(app_name)
    except agents.AgentNotFound as exc:
        raise NotFound(str(exc)) from exc
    if not loaded.ok:
        raise APIException(f"Agent {app_name!r} failed to load: {loaded.error_line}")


# ---- apps ----------------------------------------------------------------------


class AppList(RootModel[list[str] | ListAppsResponse]):
    """Schema only: ADK's answer, its app names or, when detailed, `{apps: [...]}`."""


class AppListApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        detailed = serializers.BooleanField(default=False)

    @extend_schema(
        operation_id="app_list", tags=["apps"], parameters=[InputSerializer],
        responses={200: OpenApiResponse(AppList, description="App names, or `{apps: [...]}` when detailed.")},
    )
    def get(self, request: Request) -> Response:
        """Names of the agents in the agents directory, as `adk api_server` lists them."""
        if not _validated(self.InputSerializer, request.query_params)["detailed"]:
            return Response(agents.agent_names())
        detailed = ListAppsResponse(apps=[AppInfo(**app) for app in agents.loader().list_agents_detailed()])
        return Response(detailed.model_dump(mode="json", by_alias=True))  # with `agents: null`, as ADK's server


# ---- runs ----------------------------------------------------------------------


@extend_schema_serializer(component_name="RunAgentRequest")
class RunInputSerializer(AdkBodySerializer):
    """ADK's `RunAgentRequest`."""

    appName = StrictCharField(source="app_name", validators=[NON_BLANK])
    userId = StrictCharField(source="user_id", validators=[NON_BLANK])
    sessionId = StrictCharField(source="session_id", validators=[NON_BLANK])
    newMessage = AdkModelField(types.Content, source="new_message", required=False, allow_null=True)
    streaming = StrictBooleanField(default=False)
    stateDelta = serializers.DictField(source="state_delta", required=False, allow_null=True)
    invocationId = StrictCharField(
        source="invocation_id", required=False, allow_null=True, allow_blank=True,
        help_text="Resume this (interrupted) invocation; no newMessage needed.",
    )
    customMetadata = serializers.DictField(source="custom_metadata", required=False, allow_null=True)
    # Accepted as ADK accepts it; ADK only uses it for frames of artifact events.
    functionCallEventId = StrictCharField(required=False, allow_null=True, allow_blank=True)

    def validate_stateDelta(self, value: dict[str, Any] | None) -> dict[str, Any] | None:  # noqa: N802 (ADK's name)
        return checked_state_delta(value, "stateDelta")


def _run_request(data: Any, *, streaming: bool) -> RunRequest:
    """Validate a run before it starts: a stream, once begun, cannot turn into a 404."""
    body = _validated(RunInputSerializer, data)
    key = SessionKey(body["app_name"], body["user_id"], body["session_id"])
    row = _require_session(key)  # another user's session is simply not found
    _require_agent(real_app_name(key.app_name))  # a sandbox's session runs its agent
    message, invocation_id = body.get("new_message"), body.get("invocation_id") or None
    if message is None and invocation_id is None:
        raise ValidationError({"newMessage": ["Give a newMessage, or an invocationId to resume."]})
    if message is None and not selectors.invocation_exists(session=row, invocation_id=invocation_id):
        raise NotFound(f"Invocation {invocation_id!r} not found in session {key.session_id!r}.")
    return RunRequest(
        key=key, new_message=message, state_delta=body.get("state_delta"), invocation_id=invocation_id,
        streaming=streaming and body["streaming"], custom_metadata=body.get("custom_metadata"),
    )


async def _collect(request: RunRequest) -> list[AdkEvent]:
    return [event async for event in run_agent(request)]


class RunApi(AdkApi):
    InputSerializer = RunInputSerializer

    @extend_schema(operation_id="run", tags=["runs"], request=InputSerializer,
                   responses={200: AdkEventList, **errors(404, 413)})
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


# OpenAPI 3.1 describes an event stream by the schema of each event (3.2 would call it itemSchema).
SSE_EVENT = {
    "type": "object",
    "description": "One Server-Sent Event: `data` is JSON text, an ADK event or ADK's error frame.",
    "properties": {
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"anyOf": [
            {"$ref": "#/components/schemas/Event"},
            {"type": "object", "required": ["error"],
             "properties": {"error": {"type": "string"}, "error_details": {"type": "object"}}},
        ]}},
        "event": {"type": "string"},
    },
    "required": ["data"],
}


class RunSseApi(AdkApi):
    InputSerializer = RunInputSerializer
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="run_sse", tags=["runs"], request=InputSerializer,
        responses={(200, "text/event-stream"): OpenApiResponse(
            SSE_EVENT,
            description="text/event-stream: one `data: <ADK event JSON>` frame per event; with streaming true, "
            "partial token chunks too. An exception in the agent sends its stored error event, then "
            'ADK\'s `data: {"error": ..., "error_details": ...}` frame, and the stream ends.',
        ), **errors(404, 413)},
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


# ---- ADK's server: version, health, telemetry consent -----------------------------


class VersionApi(AdkApi):
    @extend_schema_serializer(component_name="AdkVersion")
    class OutputSerializer(serializers.Serializer):
        version = serializers.CharField(help_text="google-adk's version.")
        language = serializers.CharField()
        language_version = serializers.CharField()

    @extend_schema(operation_id="version", tags=["apps"], responses={200: OutputSerializer})
    def get(self, request: Request) -> Response:
        """ADK's `GET /version`: the google-adk serving the agents, and its Python."""
        python = ".".join(str(n) for n in sys.version_info[:3])
        return Response({"version": installed_version("google-adk"), "language": "python", "language_version": python})


class HealthApi(AdkApi):
    """ADK's `GET /health`, for load balancers: no login. `/healthz` also checks the database."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(operation_id="health", tags=["apps"], auth=[],
                   responses={200: inline_serializer("AdkHealth", {"status": serializers.CharField()})})
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


@extend_schema_serializer(component_name="TelemetryConsent")
class TelemetrySerializer(serializers.Serializer):
    telemetry = serializers.BooleanField()


TELEMETRY_HEADER = OpenApiParameter(
    "x-adk-telemetry-request", str, OpenApiParameter.HEADER, required=True, enum=["true"],
    description="ADK's dev server refuses the consent without it (400), so a page of another origin cannot set it "
                "through a plain form post; adk-web sends it.",
)


@reads  # nothing is stored: a viewer may send it
class TelemetryApi(AdkApi):
    """adk-web asks for consent to send its usage analytics to Google, and blocks its UI until
    answered. adkui sends none: the consent is always off, so adk-web never asks, and a POST
    (checked as ADK checks it) changes nothing."""

    @extend_schema(operation_id="telemetry_get", tags=["apps"], responses={200: TelemetrySerializer})
    def get(self, request: Request) -> Response:
        return Response({"telemetry": False})

    @extend_schema(operation_id="telemetry_set", tags=["apps"], request=TelemetryConsentRequest,
                   parameters=[TELEMETRY_HEADER], responses={200: TelemetrySerializer})
    def post(self, request: Request) -> Response:
        if request.headers.get("x-adk-telemetry-request") != "true":
            raise BadRequest("Forbidden: missing required security header")
        validate_adk(TelemetryConsentRequest, request.data)
        return Response({"telemetry": False})


# ---- the agent: app-info and graphs ----------------------------------------------------


def _app(app_name: str) -> AdkApp:
    """The agent as ADK's App (a bare agent wrapped, as ADK's server wraps it)."""
    _require_agent(app_name)
    root = agents.load(app_name).root
    if isinstance(root, AdkApp):
        return root
    return AdkApp.model_construct(name=app_name, root_agent=root)


def _root_agent(app_name: str) -> BaseAgent:
    return _app(app_name).root_agent


class AppInfoApi(AdkApi):
    @extend_schema(operation_id="app_info", tags=["apps"], responses={200: AppInfo})
    def get(self, request: Request, app_name: str) -> Response:
        """ADK's app-info: the root agent and every agent under it (400 when the root is no LlmAgent)."""
        root = _root_agent(app_name)
        if not isinstance(root, LlmAgent):
            raise BadRequest("Root agent is not an LlmAgent")
        info = AppInfo(name=app_name, root_agent_name=root.name, description=root.description, language="python",
                       agents=async_to_sync(get_agents_dict)(root))
        return Response(info.model_dump(mode="json", by_alias=True, exclude_none=True))


class BuildGraphApi(AdkApi):
    @extend_schema(operation_id="build_graph", tags=["apps"],
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="ADK's serialized app: "
                                                   "name, root_agent (the agent tree), readme.")})
    def get(self, request: Request, app_name: str) -> Response:
        """The app as ADK's graph serializer describes it, with the agent folder's README.md."""
        app = _app(app_name)  # first: only an agent's own folder is read
        readme = Path(agents.agents_dir()) / app_name / "README.md"
        text = readme.read_text(encoding="utf-8", errors="replace") if readme.is_file() else None
        return Response(serialize_app_info(app, text))


class GraphQuerySerializer(serializers.Serializer):
    dark_mode = serializers.BooleanField(default=False)
    node = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)


class DotSourceMap(RootModel[dict[str, GetEventGraphResult]]):
    """Schema only: Graphviz DOT source per workflow path ("" for the root)."""


class BuildGraphImageApi(AdkApi):
    @extend_schema(operation_id="build_graph_image", tags=["apps"], parameters=[GraphQuerySerializer],
                   responses={200: DotSourceMap})
    def get(self, request: Request, app_name: str) -> Response:
        """DOT source of the agent (or of `node`, a path like `root/sub`) and of every workflow
        under it, drawn by ADK's workflow plotter (DOT text: no Graphviz binary needed)."""
        query = _validated(GraphQuerySerializer, request.query_params)
        root = serialize_app_info(_app(app_name))["root_agent"]
        target = _node_at(root, query["node"])
        if target is None:
            raise NotFound(f"Node not found: {query['node']}")
        drawn = _workflows(target, query["node"])
        drawn.setdefault(query["node"], target)  # a plain agent tree is drawn too
        graphs = {}
        for path, info in drawn.items():
            dot = plot_workflow_graph({"root_agent": info}, format="dot", dark_mode=query["dark_mode"])
            if dot:
                graphs[path] = GetEventGraphResult(dot_src=str(dot)).model_dump(by_alias=True)
        return Response(graphs)


def _children(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A serialized node's children: a workflow's graph nodes, its nodes, its sub-agents."""
    found = [*((node.get("graph") or {}).get("nodes") or []), *(node.get("nodes") or []),
             *(node.get("sub_agents") or [])]
    return [child for child in found if isinstance(child, dict) and child.get("name")]


def _node_at(root: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The node at `path` ("a/b/c"; the root's own name may lead), or None."""
    names = [name for name in path.strip("/").split("/") if name]
    if names and names[0] == root.get("name"):
        names = names[1:]
    node: dict[str, Any] | None = root
    for name in names:
        node = next((child for child in _children(node) if child["name"] == name), None)
        if node is None:
            return None
    return node


def _workflows(node: dict[str, Any], path: str) -> dict[str, dict[str, Any]]:
    """Every node with a workflow graph at or under `node`, by path."""
    found = {path: node} if node.get("graph") else {}
    for child in _children(node):
        found.update(_workflows(child, f"{path}/{child['name']}" if path else child["name"]))
    return found


# ADK answers `{}` where it has no graph to draw (an unknown event, an agent with no tree).
GRAPH_OR_NOTHING = OpenApiResponse(
    {"anyOf": [{"$ref": "#/components/schemas/GetEventGraphResult"}, {"type": "object", "maxProperties": 0}]},
    description="The graph in DOT, or `{}` when there is none to draw, as ADK answers.",
)


class GraphApi(AdkApi):
    @extend_schema(operation_id="agent_graph", tags=["apps"], parameters=[GraphQuerySerializer],
                   responses={200: GRAPH_OR_NOTHING})
    def get(self, request: Request, app_name: str) -> Response:
        """The agent tree in DOT, no highlights (ADK's `GET /dev/apps/{app}/graph`)."""
        query = _validated(GraphQuerySerializer, request.query_params)
        graph = async_to_sync(get_agent_graph)(_root_agent(app_name), [], dark_mode=query["dark_mode"])
        source = getattr(graph, "source", None)
        return Response(GetEventGraphResult(dot_src=source).model_dump(by_alias=True) if source else {})


class EventGraphApi(AdkApi):
    @extend_schema(operation_id="event_graph", tags=["apps"], responses={200: GRAPH_OR_NOTHING})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str, event_id: str) -> Response:
        """The agent tree in DOT with the event's hop highlighted: its author to each function it called,
        or each function answering back to it (ADK's `GET .../events/{event_id}/graph`, which adk-web
        still calls), in ADK's default colours. An unknown session or event is `{}`, as in ADK."""
        root = _root_agent(app_name)
        event = _stored_event(SessionKey(app_name, user_id, session_id), event_id)
        if event is None:
            return Response({})
        graph = async_to_sync(get_agent_graph)(root, _event_highlights(event))
        source = getattr(graph, "source", None)
        return Response(GetEventGraphResult(dot_src=source).model_dump(by_alias=True) if source else {})


def _stored_event(key: SessionKey, event_id: str) -> AdkEvent | None:
    row = selectors.session_find(**key.__dict__)
    stored = EventRow.objects.filter(session=row, event_id=event_id).only("data").first() if row else None
    return AdkEvent.model_validate(stored.data) if stored else None


def _event_highlights(event: AdkEvent) -> list[tuple[str | None, str | None]]:
    """ADK's edges to highlight for an event: author to callee, responder to author, else the author alone."""
    if calls := event.get_function_calls():
        return [(event.author, call.name) for call in calls]
    if responses := event.get_function_responses():
        return [(response.name, event.author) for response in responses]
    return [(event.author, "")]


# ---- what adkui does not do: edit, test-run or deploy agents -----------------------------

NOT_HERE = ("adkui does not edit, build or deploy agents: ADK's dev server refuses these routes too "
            "unless it runs on the caller's machine. Use `adk web` in the agent's folder for that.")


class _AgentEditingOff(AdkApi):
    """ADK's answer when its agent builder and deploy routes are off (a 403 with the reason):
    adk-web then disables its builder switch and shows the reason on deploy. Nothing is read
    or written, so anyone may be told, logged in or not."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []
    OFF = {403: OpenApiResponse(ApiError, description=f'`{{"detail": "{NOT_HERE}"}}`')}


class AgentEditingOffReadApi(_AgentEditingOff):
    @extend_schema(tags=["apps"], auth=[], responses=_AgentEditingOff.OFF)
    def get(self, request: Request, **kwargs: str) -> Response:
        raise PermissionDenied(NOT_HERE)


class AgentEditingOffWriteApi(_AgentEditingOff):
    @extend_schema(tags=["apps"], auth=[], request=None, responses=_AgentEditingOff.OFF)
    def post(self, request: Request, **kwargs: str) -> Response:
        raise PermissionDenied(NOT_HERE)


# ---- docs ----------------------------------------------------------------------


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI from drf-spectacular-sidecar's bundled copy, never a CDN (the network may be closed)."""

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"drf_spectacular_sidecar/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static("drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png")
