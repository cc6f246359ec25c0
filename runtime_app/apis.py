"""The API routes that need the agent itself: list-apps, `/run`, `/run_sse`, stop; and the docs page."""
from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from django.templatetags.static import static
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from drf_spectacular.views import SpectacularSwaggerView
from google.adk.events import Event as AdkEvent
from google.genai import types
from rest_framework import serializers
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app import selectors
from sessions_app.apis.base import (
    AdkApi,
    AdkBodySerializer,
    AdkEventList,
    AdkModelField,
    _require_session,
    _validated,
)
from sessions_app.keys import SessionKey
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
        raise APIException(f"Agent {app_name!r} failed to load: {loaded.error.strip().splitlines()[-1]}")


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
