"""Trip planner: a demo agent that runs offline on the scripted model.

It exercises what adkui shows: tools writing `user:`, `app:`, session and
`temp:` state, `output_key`, `{key}` / `{key?}` instruction templates, function
calls paired with their responses, a transfer to a sub-agent, and a tool error.
Set ADKUI_DEMO_MODEL (e.g. `gemini-2.5-flash`, with GOOGLE_API_KEY) to run it on
a real model instead.
"""
from __future__ import annotations

import os
import re

from google.adk.agents import LlmAgent
from google.adk.tools import ToolContext

from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel, system_instruction_text, user_text

WEATHER = {"paris": "sunny, 21°C", "lisbon": "windy, 18°C", "oslo": "snow, -3°C", "kyoto": "rain, 12°C"}


def plan_trip(city: str, tool_context: ToolContext) -> dict:
    """Start planning a trip to `city`; remembers it in every state scope."""
    trips = (tool_context.state.get("user:trips_planned") or 0) + 1
    tool_context.state["destination"] = city
    tool_context.state["user:trips_planned"] = trips
    tool_context.state["user:last_destination"] = city
    tool_context.state["app:popular_city"] = city
    tool_context.state["temp:draft_itinerary"] = f"Day 1 in {city}"
    return {"status": "ok", "destination": city, "trips_planned": trips}


def get_weather(city: str) -> dict:
    """Current weather in `city`; fails for cities the demo does not know."""
    forecast = WEATHER.get(city.lower())
    if forecast is None:
        return {"status": "error", "error_message": f"No weather station for {city!r}."}
    return {"status": "ok", "city": city, "forecast": forecast}


HANDOFF_RULE = "hand weather questions to weather_expert"


def _city(llm_request) -> str:
    match = re.search(r"\b(?:to|in|for)\s+([A-Z][a-z]+)", user_text(llm_request))
    return match.group(1) if match else "Paris"


def _plan_call(llm_request) -> Reply:
    return Reply(function_calls=[Call("plan_trip", {"city": _city(llm_request)})])


def _weather_decision(llm_request) -> Reply:
    """Hand a weather question to weather_expert when the instruction says so, as a real model
    follows its instruction; not told to, plan a trip to the city instead (edit the instruction
    in "Edit and continue" to see the other path)."""
    if HANDOFF_RULE in system_instruction_text(llm_request):
        return Reply(function_calls=[Call("transfer_to_agent", {"agent_name": "weather_expert"})])
    return _plan_call(llm_request)


def _weather_call(llm_request) -> Reply:
    return Reply(function_calls=[Call("get_weather", {"city": _city(llm_request)})])


def _weather_answer(llm_request) -> Reply:
    result = _last_tool_result(llm_request)
    if result.get("status") == "error":
        text = f"Sorry: {result.get('error_message')}"
    else:
        text = f"The weather in {result.get('city')} is {result.get('forecast')}."
    return Reply(text=text, chunks=_chunk(text))


def _last_tool_result(llm_request) -> dict:
    for content in reversed(llm_request.contents):
        for part in content.parts or []:
            if part.function_response is not None:
                return dict(part.function_response.response or {})
    return {}


def _chunk(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _model(scripted: ScriptedModel):
    return os.environ.get("ADKUI_DEMO_MODEL") or scripted


weather_expert = LlmAgent(
    name="weather_expert",
    description="Answers questions about the weather at a destination.",
    model=_model(
        ScriptedModel(
            rules=[Rule(pattern="weather", replies=[_weather_call, _weather_answer],
                        examples=["What is the weather in Lisbon?"], description="reports the weather, or fails for an unknown city")],
            # Anything else goes back to the planner: after a transfer ADK keeps
            # talking to the agent that answered last, so without this a demo
            # session that asked about the weather could no longer plan a trip.
            default=Reply(function_calls=[Call("transfer_to_agent", {"agent_name": "trip_planner"})]),
        )
    ),
    instruction="You report the weather. The traveller is going to {destination?}.",
    tools=[get_weather],
)

root_agent = LlmAgent(
    name="trip_planner",
    description="Plans trips and remembers them.",
    model=_model(
        ScriptedModel(
            rules=[
                Rule(pattern="weather", replies=[_weather_decision, Reply(text="Done! Your trip is planned.")],
                     examples={"What is the weather in Lisbon?": "hands the question to weather_expert, which calls get_weather",
                               "And the weather in Atlantis?": "hands the question to weather_expert; Atlantis has no weather station: a tool error"},
                     description="hands the question to weather_expert (plans a trip instead when its instruction does not say to)"),
                Rule(
                    pattern=re.compile(r"\b(trip|plan|go)\b", re.I),
                    replies=[_plan_call, Reply(text="Done! Your trip is planned.", chunks=["Done! ", "Your trip ", "is planned."])],
                    examples=["Please plan a trip to Lisbon"],
                    description="calls plan_trip, which writes user:, app:, session and temp: state",
                ),
            ],
            default=Reply(
                text="Hello! Ask me to plan a trip to a city, or about the weather there.",
                chunks=["Hello! ", "Ask me to plan a trip to a city, ", "or about the weather there."],
            ),
        )
    ),
    instruction=(
        "You plan trips for {user:name?}. Their last destination was {user:last_destination?}; "
        f"the current one is {{destination?}}. Use plan_trip, and {HANDOFF_RULE}."
    ),
    tools=[plan_trip],
    sub_agents=[weather_expert],
    output_key="last_answer",
)
