"""OTLP/HTTP bodies (traces and logs), decoded into plain spans and log records.

Both encodings the OTLP spec defines: binary protobuf (`application/x-protobuf`)
and JSON (`application/json`), where trace and span ids are hex strings rather
than protobuf-JSON's base64, and either may be gzip-compressed. Anything else
is refused with the reason (`OtlpError` carries the HTTP status), before a row
is written.
"""
from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class OtlpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class SpanData:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    started_at: float
    duration_ms: float
    error: str
    attributes: dict[str, Any]
    service_name: str


@dataclass
class LogData:
    span_id: str
    event_name: str
    attributes: dict[str, Any] = field(default_factory=dict)


def max_bytes() -> int:
    return int(getattr(settings, "ADKUI_OTLP_MAX_BYTES", 8 * 1024 * 1024))


def traces(body: bytes, content_type: str, encoding: str) -> list[SpanData]:
    request = _decode(ExportTraceServiceRequest(), body, content_type, encoding)
    spans = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name") or "")
        for scope_spans in resource_spans.scope_spans:
            spans += [_span(span, service) for span in scope_spans.spans]
    return spans


def logs(body: bytes, content_type: str, encoding: str) -> list[LogData]:
    request = _decode(ExportLogsServiceRequest(), body, content_type, encoding)
    return [
        LogData(record.span_id.hex(), record.event_name, _attributes(record.attributes))
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def response(kind: str, content_type: str) -> tuple[bytes, str]:
    """OTLP's success answer for `kind` ("traces" or "logs"), in the request's encoding."""
    message = ExportTraceServiceResponse() if kind == "traces" else ExportLogsServiceResponse()
    if _media_type(content_type) == JSON:
        return json_format.MessageToJson(message).encode(), JSON
    return message.SerializeToString(), PROTOBUF


def _decode(message: Message, body: bytes, content_type: str, encoding: str) -> Any:
    media_type = _media_type(content_type)
    if media_type not in (PROTOBUF, JSON):
        raise OtlpError(415, f"Content-Type must be {PROTOBUF} or {JSON}, not {content_type or 'none'!r}.")
    body = _inflate(body, encoding)
    try:
        if media_type == PROTOBUF:
            message.ParseFromString(body)
        else:
            parsed = json.loads(body)
            if not isinstance(parsed, dict):
                raise ValueError("an OTLP JSON body is an object")
            json_format.ParseDict(_hex_ids_to_base64(parsed), message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise OtlpError(400, f"Not a valid OTLP {type(message).__name__} ({media_type}): {exc}") from exc
    return message


def _media_type(content_type: str) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _inflate(body: bytes, encoding: str) -> bytes:
    limit = max_bytes()
    if len(body) > limit:
        raise OtlpError(413, f"The body is over ADKUI_OTLP_MAX_BYTES ({limit} bytes).")
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding != "gzip":
        raise OtlpError(415, f"Content-Encoding must be gzip or none, not {encoding!r}.")
    try:
        inflated = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpError(400, f"The gzip body does not decompress: {exc}") from exc
    if len(inflated) > limit:
        raise OtlpError(413, f"The decompressed body is over ADKUI_OTLP_MAX_BYTES ({limit} bytes).")
    return inflated


def _hex_ids_to_base64(value: Any) -> Any:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping reads bytes as base64."""
    if isinstance(value, list):
        return [_hex_ids_to_base64(v) for v in value]
    if not isinstance(value, dict):
        return value
    converted = {}
    for key, item in value.items():
        if key in _ID_FIELDS and isinstance(item, str):
            try:
                item = base64.b64encode(bytes.fromhex(item)).decode()
            except ValueError as exc:
                raise ValueError(f"{key} must be hex: {item!r}") from exc
        converted[key] = _hex_ids_to_base64(item)
    return converted


def _span(span: Any, service: str) -> SpanData:
    if len(span.trace_id) != 16 or len(span.span_id) != 8:
        raise OtlpError(400, f"Span {span.name!r} has no valid traceId (16 bytes) or spanId (8 bytes).")
    error = span.status.message or "error" if span.status.code == Status.STATUS_CODE_ERROR else ""
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    return SpanData(
        trace_id=span.trace_id.hex(), span_id=span.span_id.hex(), parent_span_id=span.parent_span_id.hex(),
        name=span.name, started_at=start / 1e9, duration_ms=max(end - start, 0) / 1e6, error=error,
        attributes=_attributes(span.attributes), service_name=service,
    )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {p.key: _value(p.value) for p in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind) if kind else None

