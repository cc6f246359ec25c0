"""The recorder plugin on a real ADK Runner and DjangoSessionService (offline)."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from google.adk.apps.app import App as AdkApp
from google.adk.runners import Runner
from google.genai import types

from runtime_app.runners import make_runner
from inspector_app.models import AgentRun, ModelCall, ToolCall
from inspector_app.plugin import RecorderPlugin, app_with_recorder
from runtime_app import runs
from sessions_app.models import Event, Session
from sessions_app.keys import SessionKey

from .conftest import APP, make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def rows(model, **filters) -> list:
    return list(model.objects.filter(**filters).order_by("started_at", "pk"))


@sync_to_async
def events_of(session_id: str) -> list[Event]:
    return list(Event.objects.filter(session__session_id=session_id).order_by("seq"))


def instruction_span(call: ModelCall, key: str) -> str:
    span = next(s for s in call.request["spans"] if s["key"] == key)
    assert span["in"] == "system"
    return call.request["system_instruction"][span["start"] : span["end"]]


async def test_it_stores_the_rendered_instruction_and_which_keys_filled_it(make_turns):
    turns = await make_turns({"user:name": "Ada", "topic": "volcanoes"})
    await turns.send("hi")

    [call] = await rows(ModelCall)
    instruction = call.request["system_instruction"]
    assert instruction.startswith("You help Ada. The topic is volcanoes. Braces like {not a key} stay.")
    assert instruction_span(call, "user:name") == "Ada"
    assert instruction_span(call, "topic") == "volcanoes"
    assert [t["template"] for t in call.request["templates"]] == ["You help {user:name}. The topic is {topic?}. Braces like {not a key} stay."]
    assert call.request["templates"][0]["matched"] is True
    assert [k["key"] for k in call.request["templates"][0]["keys"]] == ["user:name", "topic"]
    assert call.session_id is not None and call.adk_session_id == turns.session_id and call.app_name == APP


async def test_a_missing_optional_key_is_an_empty_span(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("hi")

    [call] = await rows(ModelCall)
    span = next(s for s in call.request["spans"] if s["key"] == "topic")
    assert span["start"] == span["end"] and span["missing"] and span["optional"]
    assert "The topic is . Braces" in call.request["system_instruction"]


async def test_a_model_call_is_linked_to_the_event_it_produced_with_usage(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("hi")

    [call] = await rows(ModelCall)
    [user_event, reply] = await events_of(turns.session_id)
    assert call.event_id == reply.event_id and reply.author == "helper"
    assert call.invocation_id == reply.invocation_id
    assert call.response["content"]["parts"][0]["text"] == "Hello <b>there</b>!"
    assert call.finish_reason == "STOP"
    assert call.prompt_tokens > 0 and call.output_tokens > 0
    assert call.total_tokens == call.prompt_tokens + call.output_tokens
    assert call.duration_ms is not None and call.duration_ms >= 0
    assert [t["name"] for t in call.request["tools"]] == ["flaky_weather", "explode"]
    assert call.request["tools"][0]["parameters"]["properties"]["city"]["type"] == "string"
    assert call.request["contents"][-1] == {"role": "user", "parts": [{"text": "hi"}]}
    [agent_run] = await rows(AgentRun)
    assert call.parent_span_id == agent_run.span_id and agent_run.agent_name == "helper"
    assert agent_run.duration_ms >= call.duration_ms


async def test_streaming_records_the_time_to_the_first_chunk(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("hi", streaming=True)

    [call] = await rows(ModelCall)
    assert call.first_chunk_ms is not None and call.first_chunk_ms <= call.duration_ms
    assert call.response["content"]["parts"][0]["text"] == "Hello <b>there</b>!"  # the final, not a fragment


async def test_a_tool_returning_an_error_is_linked_to_both_its_events(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("what is the weather?")

    first, second = await rows(ModelCall)
    [tool] = await rows(ToolCall)
    asking, answering, final = [e for e in await events_of(turns.session_id) if e.author == "helper"]
    assert tool.tool_name == "flaky_weather" and tool.args == {"city": "Oslo"}
    assert tool.result == {"status": "error", "error_message": "No weather station for Oslo."}
    assert tool.failed and tool.error == ""
    assert tool.call_event_id == asking.event_id == first.event_id
    assert tool.event_id == answering.event_id
    assert tool.parent_span_id == first.span_id  # the call that asked for it
    assert tool.function_call_id == asking.data["content"]["parts"][0]["function_call"]["id"]
    assert second.event_id == final.event_id
    assert second.request["contents"][-1]["parts"][0]["function_response"]["response"]["status"] == "error"


async def test_a_raising_tool_is_recorded_with_its_error_and_ends_the_run(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    events = await turns.send("boom")

    assert isinstance(events[-1], RuntimeError)
    [tool] = await rows(ToolCall)
    assert tool.tool_name == "explode" and tool.error == "RuntimeError: kaboom: test"
    assert tool.result is None and tool.duration_ms is not None
    error_event = (await events_of(turns.session_id))[-1]
    assert error_event.error_code and tool.event_id == error_event.event_id
    [agent_run] = await rows(AgentRun)
    assert "kaboom" in agent_run.error


async def test_a_model_error_response_is_linked_to_its_error_event(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("quota")

    [call] = await rows(ModelCall)
    last = (await events_of(turns.session_id))[-1]
    assert call.error_code == "RESOURCE_EXHAUSTED" and call.failed
    assert call.event_id == last.event_id
    assert call.response["error_message"] == "quota <b>gone</b>"


async def test_switched_off_it_records_nothing(make_turns, settings):
    settings.ADKUI_RECORDER_ENABLED = False
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("what is the weather?")

    assert await rows(ModelCall) == [] and await rows(ToolCall) == [] and await rows(AgentRun) == []
    assert len(await events_of(turns.session_id)) == 4  # the run itself is untouched


async def test_values_over_the_size_cap_are_cut_and_marked(make_turns, settings):
    settings.ADKUI_RECORDER_MAX_BYTES = 4_000
    turns = await make_turns({"user:name": "Ada", "topic": "lava " * 5_000})
    await turns.send("hi")

    [call] = await rows(ModelCall)
    assert call.truncated and call.original_bytes > 25_000
    assert "more characters truncated]" in call.request["system_instruction"]
    assert instruction_span(call, "user:name") == "Ada"
    from inspector_app.capping import json_size

    assert json_size({"request": call.request, "response": call.response}) <= 4_000


async def test_binary_parts_are_stored_as_size_and_mime_type_unless_small(make_turns):
    turns = await make_turns({"user:name": "Ada"})
    big = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG" + b"\0" * 200_000))
    small = types.Part(inline_data=types.Blob(mime_type="text/plain", data=b"tiny"))
    await turns.send("look at this", parts=[big, small])

    [call] = await rows(ModelCall)
    parts = call.request["contents"][-1]["parts"]
    assert parts[1]["inline_data"] == {"mime_type": "image/png", "size_bytes": 200_004}
    assert parts[2]["inline_data"] == {"mime_type": "text/plain", "size_bytes": 4, "data": "dGlueQ=="}
    assert not call.truncated


async def test_a_transfer_nests_the_sub_agent_under_the_agent_that_handed_over(service):
    await service.create_session(app_name="trip_planner", user_id="ann", session_id="t1")
    runner = make_runner("trip_planner")
    runner = Runner(app=app_with_recorder(runner.agent, app_name="trip_planner"), app_name="trip_planner",
                    session_service=service)
    request = runs.RunRequest(key=SessionKey("trip_planner", "ann", "t1"),
                              new_message=types.Content(role="user", parts=[types.Part(text="weather in Atlantis?")]))
    [_ async for _ in runs.run_agent(request, runner=runner)]

    planner, expert = await rows(AgentRun)
    assert (planner.agent_name, expert.agent_name) == ("trip_planner", "weather_expert")
    assert expert.parent_span_id == planner.span_id and expert.transferred_from == "trip_planner"
    tools = {t.tool_name: t for t in await rows(ToolCall)}
    assert tools["get_weather"].failed  # the demo has no station in Atlantis
    calls = await rows(ModelCall)
    assert [c.agent_name for c in calls] == ["trip_planner", "weather_expert", "weather_expert"]
    assert "The traveller is going to ." in calls[1].request["system_instruction"]


async def test_deleting_the_session_deletes_its_records(make_turns, service):
    turns = await make_turns({"user:name": "Ada"})
    await turns.send("what is the weather?")
    assert await rows(ModelCall)

    await service.delete_session(app_name=APP, user_id="ann", session_id=turns.session_id)
    assert await rows(ModelCall) == [] and await rows(ToolCall) == [] and await rows(AgentRun) == []
    assert not await sync_to_async(Session.objects.exists)()


@pytest.mark.django_db  # builds runners only: nothing to commit
def test_it_adds_the_recorder_to_a_bare_agent_or_a_copy_of_an_app():
    agent = make_agent()
    wrapped = app_with_recorder(agent, app_name="any-name works")
    assert wrapped.root_agent is agent and [type(p) for p in wrapped.plugins] == [RecorderPlugin]

    app = AdkApp(name="my_app", root_agent=make_agent())
    copy = app_with_recorder(app, app_name="my_app")
    assert app.plugins == [] and [type(p) for p in copy.plugins] == [RecorderPlugin]
    assert app_with_recorder(copy, app_name="my_app") is copy  # never twice


async def test_a_failing_insert_costs_only_its_own_record(make_turns, monkeypatch):
    from inspector_app import services

    def broken(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(services, "model_call_record", broken)
    turns = await make_turns({"user:name": "Ada"})
    events = await turns.send("what is the weather?")

    assert not any(isinstance(e, Exception) for e in events)
    assert len(await events_of(turns.session_id)) == 4
    assert len(await rows(ToolCall)) == 1 and len(await rows(AgentRun)) == 1


async def test_a_before_model_callback_answer_is_recorded_as_such(make_turns):
    from google.adk.models.llm_response import LlmResponse

    agent = make_agent()
    agent.before_model_callback = lambda callback_context, llm_request: LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text="cached answer")]))
    turns = await make_turns({"user:name": "Ada"}, agent=agent)
    await turns.send("hi")

    [call] = await rows(ModelCall)
    reply = (await events_of(turns.session_id))[-1]
    assert call.event_id == reply.event_id
    assert call.response == {"answered_by": "before_model_callback",
                             "content": {"role": "model", "parts": [{"text": "cached answer"}]}}
    assert "You help Ada." in call.request["system_instruction"]


async def test_with_a_static_instruction_the_state_values_are_found_in_the_contents(make_turns):
    agent = make_agent()
    agent.static_instruction = "A fixed preamble, cacheable."
    turns = await make_turns({"user:name": "Ada", "topic": "tides"}, agent=agent)
    await turns.send("hi")

    [call] = await rows(ModelCall)
    assert call.request["system_instruction"].startswith("A fixed preamble, cacheable.")
    spans = {s["key"]: s for s in call.request["spans"]}
    assert spans["topic"]["in"] == "contents"
    part = call.request["contents"][spans["topic"]["content"]]["parts"][spans["topic"]["part"]]
    assert part["text"][spans["topic"]["start"] : spans["topic"]["end"]] == "tides"
