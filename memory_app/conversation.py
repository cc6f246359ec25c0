"""A session as a message list (the "headless core" view), built from stored ADK events.

Roles are `user`, `assistant` and `tool` (one message per tool result), plus
`summary` for a compaction event. Each tool call is linked to its result(s)
by call id, parallel calls included; a result whose payload reports an error
is flagged.

Tokens: an assistant message carries the model's own count of what it
generated (`usage_metadata.candidates_token_count`) when the event has it.
Every other message gets ADK's estimate of 4 characters a token (the one its
compaction uses, `apps/compaction.py`), over the same characters ADK counts:
text, tool names, and the JSON of call arguments and results. Rounded up.

`model_view` is what the model would be sent now: ADK's own request builder
(`_get_contents`) run over the stored events, so compaction summaries replace
the events they cover exactly as they would in the next model call.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from google.adk.events.event import Event
from google.genai import types

from adk_compat import model_contents

USER, ASSISTANT, TOOL, SUMMARY = "user", "assistant", "tool", "summary"
_ERROR_STATUSES = {"error", "failed", "failure"}


@dataclass
class ToolResult:
    id: Optional[str]
    name: str
    response: Any
    is_error: bool
    anchor: str = ""
    call: Optional[ToolCall] = None


@dataclass
class ToolCall:
    id: Optional[str]
    name: str
    args: dict[str, Any]
    anchor: str = ""
    results: list[ToolResult] = field(default_factory=list)


@dataclass
class Replaced:
    """The events a compaction summary stands in for."""

    first_seq: Optional[int]
    last_seq: Optional[int]
    count: int


@dataclass
class Message:
    role: str
    author: str
    seq: Optional[int] = None
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    result: Optional[ToolResult] = None
    error: Optional[str] = None
    replaces: Optional[Replaced] = None
    tokens: int = 0
    tokens_from_model: bool = False

    @property
    def is_error(self) -> bool:
        return self.error is not None or (self.result is not None and self.result.is_error)


@dataclass
class Conversation:
    messages: list[Message]
    problem: Optional[str] = None  # why ADK could not build the request, if it could not

    @property
    def total_tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    @property
    def unanswered_calls(self) -> int:
        return sum(1 for m in self.messages for c in m.calls if not c.results)


# ---- building -----------------------------------------------------------------


def history(rows: list[tuple[int, Event]], *, prefix: str = "h") -> Conversation:
    """Every stored event (`(seq, event)` in append order) as messages."""
    messages: list[Message] = []
    for seq, event in rows:
        messages.extend(_event_messages(seq, event, rows))
    _pair(messages, prefix)
    return Conversation(messages)


def model_view(events: list[Event], *, agent_name: str, branch: Optional[str] = None, prefix: str = "m") -> Conversation:
    """The contents ADK would send `agent_name`'s model now, as messages."""
    try:
        contents = model_contents(branch, events, agent_name, preserve_function_call_ids=True)
    except Exception as exc:  # ADK refuses some histories (e.g. orphaned tool results)
        return Conversation([], problem=f"{type(exc).__name__}: {exc}")
    summaries = {_joined_text(e.actions.compaction.compacted_content) for e in events if _compaction(e)}
    messages: list[Message] = []
    for content in contents:
        author = agent_name if content.role == "model" else USER
        role = ASSISTANT if content.role == "model" else USER
        for message in _content_messages(role, author, None, content.parts or []):
            if role == ASSISTANT and message.texts and _joined_text(content) in summaries:
                message.role = SUMMARY
            if message.role == TOOL:  # sent as "user" content, but it answers the agent's call
                message.author = agent_name
            messages.append(message)
    _pair(messages, prefix)
    return Conversation(messages)


def agent_names(events: list[Event]) -> list[str]:
    """Agents that spoke in the session, the one that spoke last first."""
    names = [e.author for e in events if e.author and e.author != USER and not _compaction(e)]
    return list(dict.fromkeys(reversed(names)))


def branch_of(events: list[Event], agent_name: str) -> Optional[str]:
    for event in reversed(events):
        if event.author == agent_name:
            return event.branch
    return None


def last_prompt_tokens(events: list[Event]) -> Optional[int]:
    """The newest prompt size a model reported, if any did."""
    for event in reversed(events):
        usage = event.usage_metadata
        if usage is not None and usage.prompt_token_count is not None and not _compaction(event):
            return usage.prompt_token_count
    return None


def _compaction(event: Event) -> bool:
    c = event.actions.compaction if event.actions else None
    return c is not None and c.compacted_content is not None


def _event_messages(seq: int, event: Event, rows: list[tuple[int, Event]]) -> list[Message]:
    if _compaction(event):
        compaction = event.actions.compaction
        content = compaction.compacted_content
        message = Message(role=SUMMARY, author=event.author, seq=seq, texts=_texts(content.parts or []))
        message.replaces = _replaced(compaction.start_timestamp, compaction.end_timestamp, rows)
        message.tokens = estimate_tokens(content.parts or [])
        return [message]
    role = USER if event.author == USER else ASSISTANT
    parts = (event.content.parts or []) if event.content else []
    messages = _content_messages(role, event.author, seq, parts)
    if event.error_code or event.error_message:
        error = ": ".join(str(x) for x in (event.error_code, event.error_message) if x)
        head = next((m for m in messages if m.role != TOOL), None)
        if head is None:
            head = Message(role=role, author=event.author, seq=seq)
            messages.insert(0, head)
        head.error = error
    usage = event.usage_metadata
    if role == ASSISTANT and usage is not None and usage.candidates_token_count is not None:
        for m in messages:
            if m.role == ASSISTANT:
                m.tokens, m.tokens_from_model = usage.candidates_token_count, True
    return messages


def _content_messages(role: str, author: str, seq: Optional[int], parts: list[types.Part]) -> list[Message]:
    """One message for the text and calls of a content, one per tool result."""
    head = Message(role=role, author=author, seq=seq)
    results: list[Message] = []
    own: list[types.Part] = []
    for part in parts:
        if part.function_response is not None:
            fr = part.function_response
            result = ToolResult(fr.id, fr.name or "", fr.response, is_tool_error(fr.response))
            results.append(Message(role=TOOL, author=author, seq=seq, result=result, tokens=estimate_tokens([part])))
            continue
        own.append(part)
        if part.function_call is not None:
            fc = part.function_call
            head.calls.append(ToolCall(fc.id, fc.name or "", dict(fc.args or {})))
        elif part.text is not None and part.thought:
            head.thoughts.append(part.text)
        elif part.text is not None:
            head.texts.append(part.text)
        elif part.inline_data is not None or part.file_data is not None:
            blob = part.inline_data or part.file_data
            head.attachments.append(blob.mime_type or "file")
    head.tokens = estimate_tokens(own)
    keep_head = bool(head.texts or head.thoughts or head.calls or head.attachments)
    return ([head] if keep_head else []) + results


def _replaced(start: Optional[float], end: Optional[float], rows: list[tuple[int, Event]]) -> Replaced:
    if start is None or end is None:
        return Replaced(None, None, 0)
    covered = [seq for seq, e in rows if not _compaction(e) and start <= e.timestamp <= end]
    return Replaced(covered[0] if covered else None, covered[-1] if covered else None, len(covered))


def _pair(messages: list[Message], prefix: str) -> None:
    """Link each result to the latest earlier call with its id; anchors for both."""
    by_id: dict[str, ToolCall] = {}
    number = 0
    for message in messages:
        for call in message.calls:
            number += 1
            call.anchor = f"{prefix}-call-{number}"
            if call.id:
                by_id[call.id] = call
        result = message.result
        if result is None:
            continue
        number += 1
        result.anchor = f"{prefix}-result-{number}"
        call = by_id.get(result.id) if result.id else None
        if call is not None:
            result.call = call
            call.results.append(result)


def is_tool_error(response: Any) -> bool:
    """A result that reports failure: an `error` value, or a `status` of error/failed."""
    if not isinstance(response, dict):
        return False
    if response.get("error") or response.get("error_message"):
        return True
    status = response.get("status")
    return isinstance(status, str) and status.lower() in _ERROR_STATUSES


def estimate_tokens(parts: list[types.Part]) -> int:
    chars = sum(_part_chars(p) for p in parts)
    return (chars + 3) // 4


def _part_chars(part: types.Part) -> int:
    chars = len(part.text or "")
    if part.function_call is not None:
        chars += len(part.function_call.name or "") + len(_json(part.function_call.args))
    if part.function_response is not None:
        chars += len(part.function_response.name or "") + len(_json(part.function_response.response))
    return chars


def _json(value: Any) -> str:
    return json.dumps(value, default=str) if value else ""


def _texts(parts: list[types.Part]) -> list[str]:
    return [p.text for p in parts if p.text and not p.thought]


def _joined_text(content: Optional[types.Content]) -> str:
    return "\n".join(_texts(content.parts or [])) if content else ""
