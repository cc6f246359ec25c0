"""OTLP/HTTP receivers: `POST /v1/traces` and `POST /v1/logs`, where an agent's
OpenTelemetry exporter sends (`OTEL_EXPORTER_OTLP_ENDPOINT=http://<adkui>`).
With logins on they take an API token like the rest of the API
(`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Token%20<key>`) and an editor's role."""
from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import otlp, otlp_ingest


class RawParser(BaseParser):
    """The body as it came: OTLP's own decoding reads it (protobuf or JSON, maybe gzip)."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> bytes:
        return stream.read(otlp.max_bytes() + 1) if stream is not None else b""


class _OtlpApi(APIView):
    parser_classes = [RawParser]
    kind = ""

    def post(self, request: Request) -> HttpResponse | Response:
        content_type = request.content_type or ""
        body = request.data if isinstance(request.data, bytes) else b""
        try:
            self.ingest(body, content_type, request.headers.get("Content-Encoding", ""))
        except otlp.OtlpError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        answer, answer_type = otlp.response(self.kind, content_type)
        return HttpResponse(answer, content_type=answer_type)

    def ingest(self, body: bytes, content_type: str, encoding: str) -> None:
        raise NotImplementedError


_RESPONSES = {
    200: OpenApiResponse(description="Stored (OTLP's empty Export…ServiceResponse, in the request's encoding)."),
    400: OpenApiResponse(description="Not a valid OTLP request: the reason."),
    413: OpenApiResponse(description="Over ADKUI_OTLP_MAX_BYTES (compressed or not)."),
    415: OpenApiResponse(description="Neither application/x-protobuf nor application/json, or not gzip."),
}
_REQUEST = {"application/x-protobuf": bytes, "application/json": dict}


@extend_schema_view(post=extend_schema(
    operation_id="otlp_traces", tags=["otlp"], request=_REQUEST, responses=_RESPONSES,
    description="OTLP/HTTP traces: ADK's spans, placed beside the sessions they name (`gen_ai.conversation.id`).",
))
class OtlpTracesApi(_OtlpApi):
    kind = "traces"

    def ingest(self, body: bytes, content_type: str, encoding: str) -> None:
        otlp_ingest.spans_ingest(spans=otlp.traces(body, content_type, encoding))


@extend_schema_view(post=extend_schema(
    operation_id="otlp_logs", tags=["otlp"], request=_REQUEST, responses=_RESPONSES,
    description="OTLP/HTTP logs: the message content ADK logs as events joins its model call.",
))
class OtlpLogsApi(_OtlpApi):
    kind = "logs"

    def ingest(self, body: bytes, content_type: str, encoding: str) -> None:
        otlp_ingest.logs_ingest(records=otlp.logs(body, content_type, encoding))
