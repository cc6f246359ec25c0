"""ADK's request, response and tool values in the JSON form the recorder stores.

Binary data (inline images, audio, thought signatures) is kept as its size and
mime type; only blobs up to `INLINE_KEEP_BYTES` keep their (base64) data.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

INLINE_KEEP_BYTES = 1024
_CONFIG_SHOWN_ELSEWHERE = {"system_instruction", "tools", "http_options"}


def request_json(llm_request: LlmRequest) -> dict[str, Any]:
    config = llm_request.config
    return {
        "model": llm_request.model or "",
        "system_instruction": instruction_text(config.system_instruction if config else None),
        "contents": [content_json(c) for c in llm_request.contents],
        "tools": tools_json(config.tools if config else None),
        "config": _config_json(config),
    }


def response_json(llm_response: LlmResponse) -> dict[str, Any]:
    data = _dump(llm_response, exclude={"content"})
    if llm_response.content is not None:
        data["content"] = content_json(llm_response.content)
    return data


def instruction_text(instruction: Any) -> str:
    """The system instruction as one text (ADK joins instruction pieces with blank lines)."""
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Content):
        return "\n\n".join(p.text for p in instruction.parts or [] if p.text)
    if isinstance(instruction, types.Part):
        return instruction.text or ""
    if isinstance(instruction, list):
        return "\n\n".join(instruction_text(i) for i in instruction)
    return str(instruction)


def content_json(content: types.Content) -> dict[str, Any]:
    data: dict[str, Any] = {"role": content.role or ""}
    data["parts"] = [part_json(p) for p in content.parts or []]
    return data


def part_json(part: types.Part) -> dict[str, Any]:
    # Dumped without its bytes: base64-encoding a large image only to drop it is waste.
    data = _dump(part, exclude={"inline_data", "thought_signature"})
    if part.inline_data is not None:
        data["inline_data"] = blob_json(part.inline_data.mime_type, part.inline_data.data)
    if part.thought_signature:
        data["thought_signature"] = {"size_bytes": len(part.thought_signature)}
    return _blobs_to_sizes(data)


def blob_json(mime_type: str | None, data: bytes | None) -> dict[str, Any]:
    size = len(data or b"")
    blob: dict[str, Any] = {"mime_type": mime_type or "", "size_bytes": size}
    if data and size <= INLINE_KEEP_BYTES:
        blob["data"] = base64.b64encode(data).decode()
    return blob


def tools_json(tools: list[Any] | None) -> list[dict[str, Any]]:
    """One entry per declared function (name, description, parameter schema) or built-in tool."""
    found: list[dict[str, Any]] = []
    for tool in tools or []:
        if not isinstance(tool, types.Tool):
            found.append({"name": getattr(tool, "__name__", type(tool).__name__), "kind": "other"})
            continue
        for declaration in tool.function_declarations or []:
            found.append(_declaration_json(declaration))
        for kind, spec in _dump(tool, exclude={"function_declarations"}).items():
            found.append({"name": kind, "kind": "builtin", "spec": spec})
    return found


def to_json(value: Any) -> Any:
    """Any tool argument or result as JSON (what ADK itself would send the model)."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=_fallback))
    except (TypeError, ValueError):
        return repr(value)


def _declaration_json(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    schema = declaration.parameters_json_schema
    if schema is None and declaration.parameters is not None:
        schema = _dump(declaration.parameters)
    data: dict[str, Any] = {"name": declaration.name or "", "kind": "function",
                            "description": declaration.description or "", "parameters": to_json(schema)}
    response = declaration.response_json_schema
    if response is None and declaration.response is not None:
        response = _dump(declaration.response)
    if response is not None:
        data["response"] = to_json(response)
    return data


def _config_json(config: types.GenerateContentConfig | None) -> dict[str, Any]:
    if config is None:
        return {}
    data: dict[str, Any] = {}
    for name in type(config).model_fields:
        value = getattr(config, name, None)
        if value is None or name in _CONFIG_SHOWN_ELSEWHERE:
            continue
        data[name] = _field_json(value)
    return data


def _field_json(value: Any) -> Any:
    # One field at a time: a response_schema may be a Python class, which has no dump.
    if hasattr(value, "model_dump"):
        return _dump(value)
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return to_json(value)


def _dump(model: Any, exclude: set[str] | None = None) -> dict[str, Any]:
    try:
        return _blobs_to_sizes(model.model_dump(mode="json", exclude_none=True, exclude=exclude))
    except Exception:  # a field without a JSON form must not lose the whole record
        return {"unserializable": repr(model)[:2000]}


def _blobs_to_sizes(value: Any) -> Any:
    """Nested blobs (a function response's parts, say) arrive base64-encoded: keep their size."""
    if isinstance(value, list):
        return [_blobs_to_sizes(v) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("data"), str) and "mime_type" in value:
        encoded = value["data"]
        size = len(encoded) * 3 // 4 - encoded[-2:].count("=")
        blob = {k: v for k, v in value.items() if k != "data"} | {"size_bytes": size}
        if size <= INLINE_KEEP_BYTES:
            blob["data"] = encoded
        return blob
    return {k: _blobs_to_sizes(v) for k, v in value.items()}


def _fallback(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, (bytes, bytearray)):
        return {"size_bytes": len(value)}
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)
