"""Which parts of a rendered instruction came from session state, and from which key.

ADK renders an agent's `instruction` (and the root's deprecated
`global_instruction`) by replacing `{key}` / `{key?}` / `{artifact.name}` with
state values (google/adk/flows/llm_flows/prompt/_instructions_utils.py). We
read the raw template with ADK's own placeholder pattern, work out each value
the same way from the state the model call saw, then find the rendered
template in the request: the offsets of each substituted value are the spans
to highlight. A callable instruction (an InstructionProvider) is not a
template, so it has no spans; its name is kept instead.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# ADK's own pattern and name rule, so our reading follows ADK's version.
from adk_compat import TEMPLATE_VAR_PATTERN as PATTERN
from adk_compat import is_valid_state_name as is_state_name

ARTIFACT_PREFIX = "artifact."


def agent_templates(agent: Any, state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The instruction templates ADK renders for this agent's model call, with their values."""
    found = []
    root = getattr(agent, "root_agent", None)
    global_instruction = getattr(root, "global_instruction", None)
    if isinstance(global_instruction, str) and global_instruction:
        found.append(_template("global_instruction", global_instruction, state))
    instruction = getattr(agent, "instruction", None)
    if isinstance(instruction, str) and instruction:
        found.append(_template("instruction", instruction, state))
    elif callable(instruction):
        name = getattr(instruction, "__qualname__", None) or type(instruction).__name__
        found.append({"source": "instruction", "provider": name, "pieces": []})
    return found


def pieces(template: str, state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The template as literal text and placeholders, each placeholder with ADK's substitution.

    A placeholder's `value` is None when we cannot know it without loading
    an artifact; the rendered text then tells us (see `locate`).
    """
    found: list[dict[str, Any]] = []
    last = 0
    for match in PATTERN.finditer(template):
        if match.start() > last:
            found.append({"text": template[last : match.start()]})
        found.append(_placeholder(match.group(), state))
        last = match.end()
    if last < len(template):
        found.append({"text": template[last:]})
    return found


def locate(templates: list[dict[str, Any]], request: dict[str, Any]) -> list[dict[str, Any]]:
    """Spans of substituted values in the request: where (system instruction or a
    content part), offsets, and the key. Marks each template `matched` or not."""
    spans: list[dict[str, Any]] = []
    for template in templates:
        template["matched"] = False
        if not any("key" in p for p in template["pieces"]):
            continue
        pattern = _pattern(template["pieces"])
        for where, text in _texts(request):
            match = pattern.search(text)
            if match is None:
                continue
            template["matched"] = True
            spans += _spans(template["pieces"], match, where)
            break
    return spans


def stored_templates(templates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the record keeps of each template: the raw text, never the state values twice."""
    kept = []
    for t in templates:
        item = {k: v for k, v in t.items() if k != "pieces"}
        item["keys"] = [_key_summary(p) for p in t["pieces"] if "key" in p]
        kept.append(item)
    return kept


def _template(source: str, template: str, state: Mapping[str, Any]) -> dict[str, Any]:
    return {"source": source, "template": template, "pieces": pieces(template, state)}


def _placeholder(raw: str, state: Mapping[str, Any]) -> dict[str, Any]:
    name = raw.lstrip("{").rstrip("}").strip()
    optional = name.endswith("?")
    name = name.removesuffix("?")
    if name.startswith(ARTIFACT_PREFIX):
        return {"key": name, "optional": optional, "value": None, "placeholder": raw, "missing": False}
    if not is_state_name(name):
        return {"text": raw}  # ADK leaves such braces as they are
    missing = name not in state
    value = None if missing else state[name]
    return {"key": name, "optional": optional, "value": "" if value is None else str(value),
            "placeholder": raw, "missing": missing}


def _pattern(template_pieces: list[dict[str, Any]]) -> re.Pattern[str]:
    regex = []
    for i, piece in enumerate(template_pieces):
        if "key" not in piece:
            regex.append(re.escape(piece["text"]))
        elif piece["value"] is None:
            regex.append(f"(?P<p{i}>.*?)")
        else:
            regex.append(f"(?P<p{i}>{re.escape(piece['value'])})")
    return re.compile("".join(regex), re.DOTALL)


def _texts(request: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where a rendered template can be: the system instruction, else (with a
    static_instruction) a content part ADK placed the dynamic instruction in."""
    found: list[tuple[dict[str, Any], str]] = [({"in": "system"}, request.get("system_instruction") or "")]
    for c, content in enumerate(request.get("contents") or []):
        for p, part in enumerate(content.get("parts") or [] if isinstance(content, dict) else []):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                found.append(({"in": "contents", "content": c, "part": p}, part["text"]))
    return found


def _spans(template_pieces: list[dict[str, Any]], match: re.Match[str], where: dict[str, Any]) -> list[dict[str, Any]]:
    spans = []
    for i, piece in enumerate(template_pieces):
        if "key" in piece:
            start, end = match.span(f"p{i}")
            spans.append(where | {"start": start, "end": end, "key": piece["key"], "optional": piece["optional"],
                                  "missing": piece["missing"]})
    return spans


def _key_summary(piece: dict[str, Any]) -> dict[str, Any]:
    return {"key": piece["key"], "optional": piece["optional"], "missing": piece["missing"],
            "placeholder": piece["placeholder"]}
