"""What the inspector's tabs show for one model call, built from its stored JSON.

Everything here is plain text and data for autoescaped templates: recorded
prompts and responses are never marked safe. Stored values may have been cut
to the size cap (see `capping`): cut strings come back as text plus a count,
cut lists hold a marker string where items were dropped, and every reader
here accepts both.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from sessions_app import health

from .capping import split_mark
from .models import ModelCall

TABS = ("request", "contents", "tools", "response", "usage", "diff")


@dataclass
class Segment:
    text: str
    key: str = ""
    optional: bool = False
    missing: bool = False


@dataclass
class Text:
    """A text that may carry highlighted state values and may have been cut."""

    segments: list[Segment]
    cut: int | None = None  # characters cut by the size cap

    @property
    def length(self) -> int:
        return sum(len(s.text) for s in self.segments)


@dataclass
class PartView:
    kind: str  # text | thought | call | response | blob | code | marker | other
    text: Text | None = None
    name: str = ""
    value: Any = None
    is_error: bool = False


@dataclass
class ContentView:
    index: int
    role: str
    parts: list[PartView] = field(default_factory=list)
    marker: str = ""  # set when this entry stands for contents cut by the size cap


def text_with_spans(text: str, spans: list[dict[str, Any]]) -> Text:
    """`text` split into plain and state-derived segments (spans sorted, non-overlapping)."""
    body, cut = split_mark(text or "")
    segments: list[Segment] = []
    at = 0
    for span in sorted(spans, key=lambda s: (s["start"], s["end"])):
        start, end = span["start"], min(span["end"], len(body))
        if start < at or start > len(body):
            continue  # past the cut, or overlapping an earlier span
        if start > at:
            segments.append(Segment(body[at:start]))
        segments.append(Segment(body[start:end], key=span["key"], optional=bool(span.get("optional")),
                                missing=bool(span.get("missing"))))
        at = end
    if at < len(body) or not segments:
        segments.append(Segment(body[at:]))
    return Text(segments, cut)


def instruction(call: ModelCall) -> Text:
    request = call.request or {}
    spans = [s for s in _spans(request) if s.get("in") == "system"]
    return text_with_spans(str(request.get("system_instruction") or ""), spans)


def placeholders(call: ModelCall) -> list[dict[str, Any]]:
    """Each placeholder of the instruction templates, with the value the model got."""
    request = call.request or {}
    spans = _spans(request)
    texts = {"system": str(request.get("system_instruction") or "")}
    rows = []
    for template in _list(request.get("templates")):
        if not isinstance(template, dict):
            continue
        for key in _list(template.get("keys")):
            if isinstance(key, dict):
                rows.append(key | {"source": template.get("source", ""), "value": _value_of(key, spans, request, texts),
                                   "matched": template.get("matched", False)})
    return rows


def templates(call: ModelCall) -> list[dict[str, Any]]:
    return [t for t in _list((call.request or {}).get("templates")) if isinstance(t, dict)]


def contents(call: ModelCall) -> list[ContentView]:
    request = call.request or {}
    spans = [s for s in _spans(request) if s.get("in") == "contents"]
    views = []
    for index, content in enumerate(_list(request.get("contents"))):
        if not isinstance(content, dict):
            views.append(ContentView(index, "", marker=str(content)))
            continue
        part_spans = [s for s in spans if s.get("content") == index]
        parts = [_part(p, [s for s in part_spans if s.get("part") == i]) for i, p in enumerate(_list(content.get("parts")))]
        views.append(ContentView(index, str(content.get("role") or ""), parts))
    return views


def tools(call: ModelCall) -> list[dict[str, Any]]:
    return [t if isinstance(t, dict) else {"name": str(t), "kind": "marker"} for t in _list((call.request or {}).get("tools"))]


def response_parts(call: ModelCall) -> list[PartView]:
    content = (call.response or {}).get("content")
    if not isinstance(content, dict):
        return []
    return [_part(p, []) for p in _list(content.get("parts"))]


def request_lines(request: dict[str, Any]) -> list[str]:
    """The request as text lines, for a diff: instruction, tools, config, then contents."""
    lines = ["== system instruction =="]
    lines += str(request.get("system_instruction") or "").splitlines()
    lines.append("== tools ==")
    lines += [str(t.get("name")) if isinstance(t, dict) else str(t) for t in _list(request.get("tools"))]
    lines.append("== config ==")
    config = request.get("config") if isinstance(request.get("config"), dict) else {}
    lines += [f"{k}: {_compact(v)}" for k, v in sorted(config.items())]
    for index, content in enumerate(_list(request.get("contents"))):
        if not isinstance(content, dict):
            lines.append(str(content))
            continue
        lines.append(f"== contents[{index}] {content.get('role') or ''} ==")
        for part in _list(content.get("parts")):
            lines += _part_lines(part)
    return lines


@dataclass
class DiffLine:
    kind: str  # add | del | hunk | head | same
    text: str


def request_diff(before: ModelCall, after: ModelCall) -> list[DiffLine]:
    diff = difflib.unified_diff(
        request_lines(before.request or {}), request_lines(after.request or {}),
        fromfile="previous request", tofile="this request", lineterm="", n=2,
    )
    return [DiffLine(_diff_kind(line), line) for line in diff]


def _diff_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "head"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "same")


def _part(part: Any, spans: list[dict[str, Any]]) -> PartView:
    if not isinstance(part, dict):
        return PartView("marker", name=str(part))
    if isinstance(part.get("text"), str):
        return PartView("thought" if part.get("thought") else "text", text=text_with_spans(part["text"], spans))
    if isinstance(part.get("function_call"), dict):
        call = part["function_call"]
        return PartView("call", name=str(call.get("name") or ""), value=call.get("args") or {})
    if isinstance(part.get("function_response"), dict):
        resp = part["function_response"]
        value = resp.get("response")
        is_error = health.is_tool_error(value)
        return PartView("response", name=str(resp.get("name") or ""), value=value, is_error=is_error)
    if isinstance(part.get("inline_data"), dict):
        blob = part["inline_data"]
        return PartView("blob", name=str(blob.get("mime_type") or ""), value=blob.get("size_bytes"))
    for key in ("executable_code", "code_execution_result"):
        if isinstance(part.get(key), dict):
            code = part[key]
            return PartView("code", name=key, text=text_with_spans(str(code.get("code") or code.get("output") or ""), []))
    return PartView("other", value=part)


def _part_lines(part: Any) -> list[str]:
    view = _part(part, [])
    if view.kind in ("text", "thought", "code"):
        prefix = "(thought) " if view.kind == "thought" else ""
        return [prefix + line for line in "".join(s.text for s in view.text.segments).splitlines()] or [prefix]
    if view.kind == "call":
        return [f"call {view.name}({_compact(view.value)})"]
    if view.kind == "response":
        return [f"response {view.name}: {_compact(view.value)}"]
    if view.kind == "blob":
        return [f"[{view.name} {view.value} bytes]"]
    return [_compact(view.value if view.kind == "other" else view.name)]


def _value_of(key: dict[str, Any], spans: list[dict[str, Any]], request: dict[str, Any], texts: dict[str, str]) -> str | None:
    for span in spans:
        if span.get("key") == key.get("key"):
            if span.get("in") == "system":
                text = texts["system"]
            else:
                text = _content_text(request, span.get("content"), span.get("part"))
            return text[span["start"] : span["end"]]
    return None


def _content_text(request: dict[str, Any], content: Any, part: Any) -> str:
    try:
        return str(request["contents"][content]["parts"][part]["text"])
    except (KeyError, IndexError, TypeError):
        return ""


def _spans(request: dict[str, Any]) -> list[dict[str, Any]]:
    spans = []
    for span in _list(request.get("spans")):
        if isinstance(span, dict) and isinstance(span.get("start"), int) and isinstance(span.get("end"), int):
            spans.append(span)
    return spans


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
