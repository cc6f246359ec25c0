"""End-to-end tests of ScriptedModel under a real ADK Runner, fully offline.

They use ADK's InMemorySessionService (not Django) so they pin down ADK's own
behaviour; the Django session service can be swapped in later.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents import RunConfig
from google.adk.agents.run_config import StreamingMode
from google.adk.events import Event
from google.adk.models import LlmRequest
from google.adk.models import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions import Session
from google.adk.tools import ToolContext
from google.genai import types
import pytest

from runtime_app.scripted_model import Call
from runtime_app.scripted_model import Reply
from runtime_app.scripted_model import Rule
from runtime_app.scripted_model import ScriptedModel
from runtime_app.scripted_model import estimate_tokens
from runtime_app.scripted_model import register_scripted_model

APP = "scripted_test_app"
USER = "u1"


# --- helpers ----------------------------------------------------------------


def make_runner(agent: LlmAgent) -> tuple[Runner, InMemorySessionService]:
    sessions = InMemorySessionService()
    return Runner(app_name=APP, agent=agent, session_service=sessions), sessions


async def new_session(
    sessions: InMemorySessionService, state: dict[str, Any] | None = None
) -> Session:
    return await sessions.create_session(app_name=APP, user_id=USER, state=state)


async def ask(
    runner: Runner,
    session_id: str,
    text: str,
    run_config: RunConfig | None = None,
) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [
        event
        async for event in runner.run_async(
            user_id=USER,
            session_id=session_id,
            new_message=message,
            run_config=run_config,
        )
    ]


async def reload(sessions: InMemorySessionService, session_id: str) -> Session:
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert session is not None
    return session


def final_text(events: list[Event]) -> str:
    finals = [e for e in events if e.is_final_response() and e.content]
    assert finals, f"no final response among {events!r}"
    return "".join(part.text or "" for part in finals[-1].content.parts or [])


def text_of(event: Event) -> str:
    assert event.content is not None
    return "".join(part.text or "" for part in event.content.parts or [])


# --- unit-level checks of the model itself ----------------------------------


async def collect(
    model: ScriptedModel, request: LlmRequest, stream: bool = False
) -> list[LlmResponse]:
    responses = model.generate_content_async(request, stream=stream)
    return [response async for response in responses]


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def model_says(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


async def test_default_echo_and_usage() -> None:
    responses = await collect(ScriptedModel(), LlmRequest(contents=[user("ping")]))
    assert len(responses) == 1
    (response,) = responses
    assert response.content is not None
    assert response.content.parts[0].text == "You said: ping"
    assert response.partial is False
    assert response.usage_metadata is not None
    assert response.usage_metadata.candidates_token_count == estimate_tokens("You said: ping")
    assert response.usage_metadata.prompt_token_count == estimate_tokens("ping")


async def test_selection_is_a_function_of_the_request() -> None:
    model = ScriptedModel(
        replies=["first", "second"],
        rules=[Rule(pattern=re.compile(r"^weather\b", re.I), replies=["sunny", "still sunny"])],
        default="out of script",
    )
    first = await collect(model, LlmRequest(contents=[user("hi")]))
    second = await collect(
        model, LlmRequest(contents=[user("hi"), model_says("first"), user("again")])
    )
    third = await collect(
        model,
        LlmRequest(contents=[user("a"), model_says("x"), user("b"), model_says("y"), user("c")]),
    )
    rule_0 = await collect(model, LlmRequest(contents=[user("Weather today?")]))
    rule_1 = await collect(model, LlmRequest(contents=[user("weather?"), model_says("sunny")]))
    assert [r.content.parts[0].text for r in first + second + third + rule_0 + rule_1] == [
        "first",
        "second",
        "out of script",
        "sunny",
        "still sunny",
    ]


def test_chunks_must_join_to_text() -> None:
    assert Reply(chunks=["a", "b"]).text == "ab"
    with pytest.raises(ValueError):
        Reply(text="abc", chunks=["a", "b"])


# --- 1. plain text reply ----------------------------------------------------


async def test_plain_text_reply_is_the_final_response() -> None:
    agent = LlmAgent(name="assistant", model=ScriptedModel(replies=["Hello there."]))
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(runner, session.id, "hi")

    assert len(events) == 1
    (event,) = events
    assert event.author == "assistant"
    assert event.is_final_response()
    assert text_of(event) == "Hello there."
    assert event.usage_metadata is not None
    assert event.usage_metadata.total_token_count and event.usage_metadata.total_token_count > 0


# --- 2. function call -> tool -> text, with state scopes --------------------


def remember(value: str, tool_context: ToolContext) -> dict[str, str]:
    """Stores a value in every state scope."""
    tool_context.state["user:x"] = value
    tool_context.state["app:y"] = value
    tool_context.state["z"] = value
    tool_context.state["temp:t"] = value
    return {"stored": value}


async def test_function_call_runs_tool_and_then_next_reply_is_final() -> None:
    model = ScriptedModel(
        rules=[
            Rule(
                pattern="remember",
                replies=[
                    Reply(function_calls=[Call("remember", {"value": "42"})]),
                    Reply(text="Stored it."),
                ],
            )
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[remember])
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(runner, session.id, "please remember 42")

    call_event, response_event, answer_event = events
    (call,) = call_event.get_function_calls()
    (response,) = response_event.get_function_responses()
    assert call.name == "remember" and call.args == {"value": "42"}
    # The script left the id unset, so ADK minted one and paired the result.
    assert call.id and call.id.startswith("adk-")
    assert response.id == call.id
    assert response.response == {"stored": "42"}
    assert not call_event.is_final_response()
    assert answer_event.is_final_response()
    assert text_of(answer_event) == "Stored it."

    state = (await reload(sessions, session.id)).state
    assert state["user:x"] == "42"
    assert state["app:y"] == "42"
    assert state["z"] == "42"
    assert "temp:t" not in state


async def test_explicit_call_id_is_kept() -> None:
    model = ScriptedModel(
        replies=[
            Reply(function_calls=[Call("remember", {"value": "v"}, id="call-1")]),
            "done",
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[remember])
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(runner, session.id, "go")

    assert events[0].get_function_calls()[0].id == "call-1"
    assert events[1].get_function_responses()[0].id == "call-1"
    assert final_text(events) == "done"


# --- 3. output_key ----------------------------------------------------------


async def test_output_key_stores_final_text_in_state() -> None:
    agent = LlmAgent(
        name="assistant",
        model=ScriptedModel(replies=["The answer."]),
        output_key="last_reply",
    )
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    await ask(runner, session.id, "question")

    assert (await reload(sessions, session.id)).state["last_reply"] == "The answer."


# --- 4. instruction templating ----------------------------------------------


async def test_instruction_template_is_rendered_from_state() -> None:
    seen: list[str] = []

    def capture_instruction(llm_request: LlmRequest) -> Reply:
        instruction = llm_request.config.system_instruction
        assert isinstance(instruction, str)
        seen.append(instruction)
        return Reply(text="ok")

    agent = LlmAgent(
        name="assistant",
        model=ScriptedModel(replies=[capture_instruction]),
        instruction="Hello {name}, topic {topic?}.",
    )
    runner, sessions = make_runner(agent)
    session = await new_session(sessions, state={"name": "Ada"})

    events = await ask(runner, session.id, "hi")

    assert final_text(events) == "ok"
    (instruction,) = seen
    # The optional, missing key renders as the empty string.
    assert "Hello Ada, topic ." in instruction
    assert "{" not in instruction


# --- 5. streaming -----------------------------------------------------------


async def test_sse_streaming_yields_partials_then_full_text() -> None:
    model = ScriptedModel(replies=[Reply(chunks=["The weather", " in Tokyo is", " sunny."])])
    agent = LlmAgent(name="assistant", model=model)
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(
        runner, session.id, "weather?", RunConfig(streaming_mode=StreamingMode.SSE)
    )

    partials = [e for e in events if e.partial]
    assert [text_of(e) for e in partials] == ["The weather", " in Tokyo is", " sunny."]
    final = events[-1]
    assert not final.partial and final.is_final_response()
    assert text_of(final) == "The weather in Tokyo is sunny."
    # Partial fragments are display-only; the session keeps the final event.
    stored = (await reload(sessions, session.id)).events
    assert [text_of(e) for e in stored if e.author == "assistant"] == [
        "The weather in Tokyo is sunny."
    ]


async def test_sse_streaming_tool_call_runs_once_then_streams_answer() -> None:
    calls: list[str] = []

    def lookup(city: str) -> dict[str, str]:
        """Looks a city up."""
        calls.append(city)
        return {"weather": "sunny"}

    model = ScriptedModel(
        rules=[
            Rule(
                pattern="weather",
                replies=[
                    Reply(text="Checking.", function_calls=[Call("lookup", {"city": "Oslo"})]),
                    Reply(chunks=["Oslo is ", "sunny."]),
                ],
            )
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[lookup])
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(
        runner, session.id, "weather in Oslo?", RunConfig(streaming_mode=StreamingMode.SSE)
    )

    assert calls == ["Oslo"]
    # Function calls arrive only on the final, non-partial event of a turn.
    assert not any(e.get_function_calls() for e in events if e.partial)
    assert [text_of(e) for e in events if e.partial] == ["Checking.", "Oslo is ", "sunny."]
    assert final_text(events) == "Oslo is sunny."


async def test_stream_false_yields_one_response_even_with_chunks() -> None:
    model = ScriptedModel(replies=[Reply(chunks=["a", "b"])])
    responses = await collect(model, LlmRequest(contents=[user("x")]), stream=False)
    assert len(responses) == 1 and responses[0].content.parts[0].text == "ab"


# --- 6. error reply ---------------------------------------------------------


async def test_error_reply_yields_error_event() -> None:
    model = ScriptedModel(
        replies=[Reply(error_code="RESOURCE_EXHAUSTED", error_message="Quota exceeded.")]
    )
    agent = LlmAgent(name="assistant", model=model)
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    events = await ask(runner, session.id, "hi")

    (event,) = events
    assert event.content is None
    assert event.error_code == "RESOURCE_EXHAUSTED"
    assert event.error_message == "Quota exceeded."
    assert event.is_final_response()
    assert event.usage_metadata is not None
    assert event.usage_metadata.candidates_token_count == 0

    # Errors leave nothing in the request, so a retry meets the same entry.
    (retry,) = await ask(runner, session.id, "hi again")
    assert retry.error_code == "RESOURCE_EXHAUSTED"


async def test_empty_reply_becomes_adk_no_content_error() -> None:
    agent = LlmAgent(name="assistant", model=ScriptedModel(replies=[Reply()]))
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    (event,) = await ask(runner, session.id, "hi")

    assert event.error_code == "MODEL_RETURNED_NO_CONTENT"


# --- 7. concurrency ---------------------------------------------------------


async def test_concurrent_sessions_progress_independently() -> None:
    model = ScriptedModel(replies=["one", "two", "three"])
    agent = LlmAgent(name="assistant", model=model)
    runner, sessions = make_runner(agent)
    a = await new_session(sessions)
    b = await new_session(sessions)

    async def converse(session_id: str, turns: int) -> list[str]:
        replies: list[str] = []
        for n in range(turns):
            replies.append(final_text(await ask(runner, session_id, f"turn {n}")))
            await asyncio.sleep(0)  # let the other conversation interleave
        return replies

    got_a, got_b = await asyncio.gather(converse(a.id, 3), converse(b.id, 2))

    assert got_a == ["one", "two", "three"]
    assert got_b == ["one", "two"]
    # Past the end of the script the default echo answers.
    assert final_text(await ask(runner, b.id, "and?")) == "three"
    assert final_text(await ask(runner, b.id, "more?")) == "You said: more?"


# --- 8. transfer to a sub-agent ---------------------------------------------


async def test_transfer_to_sub_agent() -> None:
    helper = LlmAgent(
        name="helper",
        description="Answers questions the root cannot.",
        model=ScriptedModel(replies=["Helper here: the answer is 7."]),
    )
    root = LlmAgent(
        name="root",
        model=ScriptedModel(
            replies=[Reply(function_calls=[Call("transfer_to_agent", {"agent_name": "helper"})])]
        ),
        sub_agents=[helper],
    )
    runner, sessions = make_runner(root)
    session = await new_session(sessions)

    events = await ask(runner, session.id, "I need the helper")

    call_event = events[0]
    assert call_event.author == "root"
    assert call_event.get_function_calls()[0].name == "transfer_to_agent"
    transfer_events = [e for e in events if e.actions.transfer_to_agent]
    assert transfer_events and transfer_events[0].actions.transfer_to_agent == "helper"
    final = events[-1]
    assert final.author == "helper"
    assert final.is_final_response()
    assert text_of(final) == "Helper here: the answer is 7."

    # The next user message goes straight to the helper, whose script moves on.
    follow_up = await ask(runner, session.id, "thanks")
    assert [e.author for e in follow_up] == ["helper"]
    assert final_text(follow_up) == "You said: thanks"


# --- registry opt-in ----------------------------------------------------------


async def test_registered_model_name_resolves_to_echoing_model() -> None:
    register_scripted_model()
    agent = LlmAgent(name="assistant", model="scripted-echo")
    assert isinstance(agent.canonical_model, ScriptedModel)
    runner, sessions = make_runner(agent)
    session = await new_session(sessions)

    assert final_text(await ask(runner, session.id, "hello")) == "You said: hello"
