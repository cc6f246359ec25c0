"""A real ADK Runner on DjangoSessionService, offline with the scripted model."""
from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import ToolContext
from google.genai import types

from runtime_app.scripted_model import Call, Reply, ScriptedModel
from sessions_app.models import Event as EventRow
from sessions_app.models import StateChange

pytestmark = pytest.mark.django_db(transaction=True)

APP = "runner_app"


def remember(topic: str, tool_context: ToolContext) -> dict:
    """Remember a topic in every scope."""
    tool_context.state["topic"] = topic
    tool_context.state["user:favourite"] = topic
    tool_context.state["app:topics_seen"] = (tool_context.state.get("app:topics_seen") or 0) + 1
    tool_context.state["temp:scratch"] = "gone after the invocation"
    return {"remembered": topic}


def make_agent(seen_instructions: list[str]) -> LlmAgent:
    def answer(llm_request) -> Reply:
        seen_instructions.append(str(llm_request.config.system_instruction))
        return Reply(text="Noted: cats.")

    return LlmAgent(
        name="assistant",
        model=ScriptedModel(replies=[Reply(function_calls=[Call("remember", {"topic": "cats"})]), answer]),
        instruction="You help {name}. Current topic: {topic?}.",
        tools=[remember],
        output_key="last_reply",
    )


async def run_once(service, seen: list[str]):
    runner = Runner(app_name=APP, agent=make_agent(seen), session_service=service)
    session = await service.create_session(app_name=APP, user_id="ann", state={"name": "Ann"})
    message = types.Content(role="user", parts=[types.Part(text="remember cats")])
    events = [e async for e in runner.run_async(user_id="ann", session_id=session.id, new_message=message)]
    stored = await service.get_session(app_name=APP, user_id="ann", session_id=session.id)
    return events, stored


async def test_a_runner_run_writes_through_a_tool_and_output_key(service):
    seen: list[str] = []
    events, stored = await run_once(service, seen)

    assert stored.state == {
        "name": "Ann",
        "topic": "cats",
        "user:favourite": "cats",
        "app:topics_seen": 1,
        "last_reply": "Noted: cats.",
    }
    # user message, then the function call, function response, final text the run yielded
    assert stored.events[0].author == "user"
    assert [e.id for e in stored.events[1:]] == [e.id for e in events]
    call = stored.events[1].get_function_calls()[0]
    response = stored.events[2].get_function_responses()[0]
    assert call.id == response.id and response.response == {"remembered": "cats"}
    assert stored.events[-1].is_final_response()
    # {name} rendered from state; {topic?} rendered once the tool had set it
    assert "You help Ann. Current topic: cats." in seen[0]
    # temp: never reaches storage
    assert all("temp:scratch" not in e.actions.state_delta for e in stored.events)
    assert not await StateChange.objects.filter(key="scratch").aexists()
    assert await EventRow.objects.filter(has_function_call=True).acount() == 1
    assert await EventRow.objects.filter(has_function_response=True).acount() == 1


async def test_it_stores_what_adks_in_memory_service_keeps(service):
    _, ours = await run_once(service, [])
    _, reference = await run_once(InMemorySessionService(), [])
    assert ours.state == reference.state
    assert shape(ours) == shape(reference)


def shape(session) -> list:
    """Each event's author, content and delta, with the random call ids blanked."""
    out = []
    for event in session.events:
        content = event.content.model_dump(exclude_none=True) if event.content else None
        for part in (content or {}).get("parts", []):
            for kind in ("function_call", "function_response"):
                if kind in part:
                    part[kind].pop("id", None)
        out.append((event.author, content, event.actions.state_delta))
    return out
