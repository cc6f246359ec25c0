"""Memory demo: notes as artifacts, long-term memory, and context compaction, offline.

- `save_note` saves a session artifact (`notes/<title>.md`, a new version on
  every save); `remember_preference` keeps a user-scoped `user:preferences.json`
  that all of the user's sessions share.
- ADK's `preload_memory` tool puts memories matching each message in the
  prompt; "recall ..." makes the model call ADK's `load_memory` tool.
- The app compacts its history (ADK's `EventsCompactionConfig`): after every
  3 new invocations the last ones are summarised (1 invocation of overlap) by
  a scripted summariser, and the summary replaces them in later prompts.

Set ADKUI_DEMO_MODEL (with GOOGLE_API_KEY) to run on a real model instead;
the summariser then uses that model too.
"""
from __future__ import annotations

import json
import os
import re

from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.models import LlmRequest
from google.adk.tools import ToolContext, load_memory, preload_memory
from google.genai import types

from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel, user_text

APP_NAME = "memory_demo"
_PAST = "<PAST_CONVERSATIONS>"


async def save_note(title: str, text: str, tool_context: ToolContext) -> dict:
    """Save a note as the artifact notes/<title>.md; saving again adds a version."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "note"
    filename = f"notes/{slug}.md"
    version = await tool_context.save_artifact(filename, types.Part(text=f"# {title}\n\n{text}\n"))
    return {"status": "ok", "filename": filename, "version": version}


async def remember_preference(key: str, value: str, tool_context: ToolContext) -> dict:
    """Store a preference in user:preferences.json, shared by all the user's sessions."""
    current = await tool_context.load_artifact("user:preferences.json")
    prefs = json.loads(current.inline_data.data) if current and current.inline_data else {}
    prefs[key] = value
    blob = types.Blob(mime_type="application/json", data=json.dumps(prefs, indent=2).encode())
    version = await tool_context.save_artifact("user:preferences.json", types.Part(inline_data=blob))
    return {"status": "ok", "preferences": prefs, "version": version}


# ---- the scripted model's replies --------------------------------------------


def _after(word: str, llm_request: LlmRequest) -> str:
    text = user_text(llm_request)
    match = re.search(rf"\b{word}\b:?\s*(.*)", text, re.I)
    return (match.group(1) if match else text).strip(" .?!") or text


def _note_call(llm_request: LlmRequest) -> Reply:
    body = _after("note", llm_request)
    title = " ".join(body.split()[:3]) or "note"
    return Reply(function_calls=[Call("save_note", {"title": title, "text": body})])


def _preference_call(llm_request: LlmRequest) -> Reply:
    match = re.search(r"prefer\s+(.+)", user_text(llm_request), re.I)
    value = (match.group(1) if match else "?").strip(" .")
    return Reply(function_calls=[Call("remember_preference", {"key": "likes", "value": value})])


def _recall_call(llm_request: LlmRequest) -> Reply:
    return Reply(function_calls=[Call("load_memory", {"query": _after("recall", llm_request)})])


def _tool_result(llm_request: LlmRequest) -> tuple[str, dict]:
    """The name and payload of the tool result this model turn answers, if any.

    Only a result after the model's latest turn counts; preload_memory may put
    its memories after it, which is text, not another turn.
    """
    for content in reversed(llm_request.contents):
        if content.role == "model":
            break
        for part in content.parts or []:
            if part.function_response is not None:
                response = part.function_response.response or {}
                # ADK wraps a non-dict return (load_memory's pydantic model) as {"result": ...}.
                inner = response.get("result", response)
                payload = inner.model_dump(mode="json") if hasattr(inner, "model_dump") else dict(inner)
                return part.function_response.name or "", payload
    return "", {}


def _saved(llm_request: LlmRequest) -> Reply:
    _, result = _tool_result(llm_request)
    if "filename" in result:
        return Reply(text=f"Saved {result['filename']} (version {result['version']}).")
    return Reply(text=f"Noted your preferences: {result.get('preferences')}.")


def _recalled(llm_request: LlmRequest) -> Reply:
    _, result = _tool_result(llm_request)
    memories = result.get("memories") or []
    texts = [p.get("text", "") for m in memories for p in (m.get("content") or {}).get("parts", []) if p.get("text")]
    if not texts:
        return Reply(text="I found nothing about that in my memory.")
    return Reply(text="From memory: " + " | ".join(t[:80] for t in texts[:3]))


def _chat(llm_request: LlmRequest) -> Reply:
    # preload_memory's block can sit after a tool result, where the scripted
    # model reads it as the user's message: answer the tool result then.
    tool, _ = _tool_result(llm_request)
    if tool == "load_memory":
        return _recalled(llm_request)
    if tool:
        return _saved(llm_request)
    for content in llm_request.contents:
        text = "".join(p.text or "" for p in content.parts or [])
        if _PAST in text:
            lines = [ln for ln in text.split(_PAST)[1].splitlines() if ": " in ln and not ln.startswith("Time:")]
            if lines:
                return Reply(text=f"That reminds me of {len(lines)} earlier message(s), e.g. {lines[0][:80]!r}.")
    return Reply(text=f"Noted: {user_text(llm_request)}")


def _summary(llm_request: LlmRequest) -> Reply:
    """The compaction summary: the user's lines and the tools used, briefly."""
    prompt = user_text(llm_request)
    said = re.findall(r"^user: (.+)$", prompt, re.M)
    tools = sorted(set(re.findall(r"called tool: (\w+)\(", prompt)))
    text = "Conversation Language: English. The user said: " + "; ".join(s[:60] for s in said)
    return Reply(text=text + (f". Tools used: {', '.join(tools)}." if tools else "."))


def _model(scripted: ScriptedModel):
    return os.environ.get("ADKUI_DEMO_MODEL") or scripted


root_agent = LlmAgent(
    name="notes_keeper",
    description="Keeps notes as artifacts and remembers earlier sessions.",
    model=_model(
        ScriptedModel(
            rules=[
                Rule(pattern=re.compile(r"\bnote\b", re.I), replies=[_note_call, _saved],
                     examples=["note: pack the camera"], description="saves a note as an artifact"),
                Rule(pattern=re.compile(r"\bprefer\b", re.I), replies=[_preference_call, _saved],
                     examples=["I prefer window seats"], description="keeps a preference in user:preferences.json"),
                Rule(pattern=re.compile(r"\brecall\b", re.I), replies=[_recall_call, _recalled],
                     examples=["recall camera"], description="searches long-term memory (load_memory)"),
            ],
            default=_chat,
        )
    ),
    instruction=(
        "You keep the user's notes with save_note and preferences with remember_preference. "
        "When asked to recall something, use load_memory."
    ),
    tools=[save_note, remember_preference, load_memory, preload_memory],
)

_summarizer = None if os.environ.get("ADKUI_DEMO_MODEL") else LlmEventSummarizer(llm=ScriptedModel(default=_summary))

app = App(
    name=APP_NAME,
    root_agent=root_agent,
    events_compaction_config=EventsCompactionConfig(compaction_interval=3, overlap_size=1, summarizer=_summarizer),
)
