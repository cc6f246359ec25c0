"""The memory demo on the flow a newcomer tries first: it must end, and answer."""
from __future__ import annotations

import asyncio

import pytest
from google.adk.agents.run_config import RunConfig
from google.genai import types

from runtime_app.runners import make_runner

pytestmark = pytest.mark.django_db(transaction=True)

APP, USER = "memory_demo", "ann"


async def say(runner, session_id: str, text: str) -> list:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    # A bound far above what one turn needs: a loop fails here instead of running on.
    config = RunConfig(max_llm_calls=10)
    events = runner.run_async(user_id=USER, session_id=session_id, new_message=message, run_config=config)
    return [e async for e in events]


async def test_a_note_remembered_then_recalled_in_a_new_chat_ends_with_an_answer(service, artifacts, memory):
    runner = make_runner(APP, session_service=service)
    await service.create_session(app_name=APP, user_id=USER, session_id="first")
    await say(runner, "first", "note: trip to Lisbon in May")
    await memory.add_session_to_memory(await service.get_session(app_name=APP, user_id=USER, session_id="first"))
    await service.create_session(app_name=APP, user_id=USER, session_id="second")

    events = await asyncio.wait_for(say(runner, "second", "Can you recall Lisbon?"), timeout=30)

    calls = [c.name for e in events for c in e.get_function_calls()]
    assert calls == ["load_memory"], calls  # recalled once; no note saved again
    final = events[-1]
    assert final.is_final_response() and final.error_code is None
    assert "Lisbon" in final.content.parts[0].text
    versions = await artifacts.list_versions(app_name=APP, user_id=USER, session_id="first", filename="notes/trip-to-lisbon.md")
    assert versions == [0]
