"""A small agent whose instruction uses {user:name} and {topic?}, run with the recorder.

The tests add the recorder themselves through `app_with_recorder`, the same
helper `runtime_app.runners.make_runner` uses.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import Runner
from google.genai import types

from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel
from inspector_app.plugin import app_with_recorder

APP = "inspected_app"
INSTRUCTION = "You help {user:name}. The topic is {topic?}. Braces like {not a key} stay."


def flaky_weather(city: str) -> dict:
    """Weather for `city`; this station is always down."""
    return {"status": "error", "error_message": f"No weather station for {city}."}


def explode(reason: str) -> dict:
    """Always raises."""
    raise RuntimeError(f"kaboom: {reason}")


def make_agent() -> LlmAgent:
    model = ScriptedModel(
        rules=[
            Rule(pattern="weather", replies=[Reply(function_calls=[Call("flaky_weather", {"city": "Oslo"})]),
                                            Reply(text="The station is down.", chunks=["The station ", "is down."])]),
            Rule(pattern="boom", replies=[Reply(function_calls=[Call("explode", {"reason": "test"})]), "unreachable"]),
            Rule(pattern="quota", replies=[Reply(error_code="RESOURCE_EXHAUSTED", error_message="quota <b>gone</b>")]),
        ],
        default=Reply(text="Hello <b>there</b>!", chunks=["Hello ", "<b>there</b>!"]),
    )
    return LlmAgent(name="helper", model=model, instruction=INSTRUCTION, tools=[flaky_weather, explode])


@dataclass
class Turns:
    runner: Runner
    user_id: str
    session_id: str

    async def send(self, text: str, *, streaming: bool = False, parts: list[types.Part] | None = None) -> list:
        message = types.Content(role="user", parts=[types.Part(text=text), *(parts or [])])
        config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE)
        events = []
        try:
            async for event in self.runner.run_async(user_id=self.user_id, session_id=self.session_id,
                                                     new_message=message, run_config=config):
                events.append(event)
        except RuntimeError as exc:  # ADK re-raises a tool's exception after storing its error event
            events.append(exc)
        return events


@pytest.fixture
def make_turns(service):
    async def make(state: dict | None = None, agent: LlmAgent | None = None, app_name: str = APP) -> Turns:
        runner = Runner(app=app_with_recorder(agent or make_agent(), app_name=app_name), app_name=app_name,
                        session_service=service)
        session = await service.create_session(app_name=app_name, user_id="ann", state=state or {})
        return Turns(runner, "ann", session.id)

    return make
