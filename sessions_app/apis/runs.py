"""Running agents (`/run`, `/run_sse`, stop) and the API docs page."""
from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from django.templatetags.static import static
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from drf_spectacular.views import SpectacularSwaggerView
from google.adk.events.event import Event as AdkEvent
from google.genai import types
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from ..models import Event
from ..runs import RunRequest, adk_json, run_agent, sse_stream, stop_run
from ..services import SessionKey
from .base import (
    AdkApi,
    AdkBodySerializer,
    AdkEventList,
    AdkModelField,
    _require_agent,
    _require_session,
    _validated,
)


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
