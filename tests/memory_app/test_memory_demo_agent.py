"""The memory demo agent run by a real ADK Runner on our three services, offline."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from google.genai import types

from adkui.adk import DjangoArtifactService, DjangoMemoryService
from runtime_app.runners import make_runner
from memory_app import conversation, selectors
from memory_app.naming import artifact_key
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)

APP, USER = "memory_demo", "ann"


async def say(runner, session_id: str, text: str) -> list:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [e async for e in runner.run_async(user_id=USER, session_id=session_id, new_message=message)]


@pytest.fixture
def runner(service, artifacts, memory):
    built = make_runner(APP, session_service=service)
    # make_runner wires our artifact and memory services itself.
    assert isinstance(built.artifact_service, DjangoArtifactService)
    assert isinstance(built.memory_service, DjangoMemoryService)
    return built


async def test_tools_save_session_and_user_artifacts(runner, service, artifacts):
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    await say(runner, "s1", "note: buy oat milk")
    await say(runner, "s1", "note: buy oat milk and bread")
    await say(runner, "s1", "I prefer green tea")
    keys = await artifacts.list_artifact_keys(app_name=APP, user_id=USER, session_id="s1")
    assert keys == ["notes/buy-oat-milk.md", "user:preferences.json"]
    assert await artifacts.list_versions(app_name=APP, user_id=USER, session_id="s1", filename="notes/buy-oat-milk.md") == [0, 1]
    prefs = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id="other", filename="user:preferences.json")
    assert b"green tea" in prefs.inline_data.data
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert any(e.actions.artifact_delta for e in stored.events)


async def test_load_memory_and_preload_memory_search_earlier_sessions(runner, service, memory):
    await service.create_session(app_name=APP, user_id=USER, session_id="old")
    await say(runner, "old", "My sister lives in Porto")
    await memory.add_session_to_memory(await service.get_session(app_name=APP, user_id=USER, session_id="old"))

    await service.create_session(app_name=APP, user_id=USER, session_id="new")
    events = await say(runner, "new", "recall where does my sister live")
    calls = [c for e in events for c in e.get_function_calls()]
    assert [c.name for c in calls] == ["load_memory"]
    assert events[-1].content.parts[0].text.startswith("From memory:")  # load_memory found it
    assert "Porto" in events[-1].content.parts[0].text

    events = await say(runner, "new", "Porto is lovely")
    assert "earlier message" in events[-1].content.parts[0].text  # preload_memory put it in the prompt
    assert (await say(runner, "new", "recall zebras"))[-1].content.parts[0].text == "I found nothing about that in my memory."


async def test_compaction_events_are_produced_and_replace_what_they_cover(runner, service):
    await service.create_session(app_name=APP, user_id=USER, session_id="c1")
    for text in ["hello there", "note: pack the tent", "what a day", "see you soon"]:
        await say(runner, "c1", text)
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="c1")
    compactions = [e for e in stored.events if e.actions.compaction]
    assert len(compactions) == 1  # after the 3rd invocation; the 4th is not enough for another
    summary = compactions[0].actions.compaction
    assert "hello there" in summary.compacted_content.parts[0].text
    assert "save_note" in summary.compacted_content.parts[0].text

    row = await Session.objects.aget(session_id="c1")
    rows = [(i + 1, e) for i, e in enumerate(stored.events)]
    history = conversation.history(rows)
    summaries = [m for m in history.messages if m.role == conversation.SUMMARY]
    assert len(summaries) == 1 and summaries[0].replaces.count >= 6
    seen = conversation.model_view(stored.events, agent_name="notes_keeper")
    seen_texts = [t for m in seen.messages for t in m.texts]
    assert "hello there" not in seen_texts  # summarised away
    assert "see you soon" in seen_texts
    assert any(m.role == conversation.SUMMARY for m in seen.messages)
    assert seen.total_tokens < history.total_tokens
    assert row.revision == len(stored.events)


async def test_the_demo_notes_are_readable_through_the_selectors(runner, service):
    await service.create_session(app_name=APP, user_id=USER, session_id="s2")
    await say(runner, "s2", "note: water the plants")
    key = artifact_key(app_name=APP, user_id=USER, filename="notes/water-the-plants.md", session_id="s2")
    part = await sync_to_async(selectors.artifact_load)(key)
    assert part.text.startswith("# water the plants")
