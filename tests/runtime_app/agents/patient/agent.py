"""An agent whose turn takes as long as it is told: "wait 30" makes its tool
wait 30 seconds before it answers. For tests of runs that outlive their page."""
from __future__ import annotations

import asyncio
import re

from google.adk.agents import LlmAgent

from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel, user_text


async def wait(seconds: float) -> dict:
    """Wait `seconds` seconds, then report it (ADK cancels the wait when the run is stopped)."""
    await asyncio.sleep(seconds)
    return {"status": "ok", "waited": seconds}


def _wait_call(llm_request) -> Reply:
    match = re.search(r"wait\s+([0-9.]+)", user_text(llm_request))
    return Reply(function_calls=[Call("wait", {"seconds": float(match.group(1)) if match else 1.0})])


root_agent = LlmAgent(
    name="patient",
    description="Waits as long as it is asked to.",
    model=ScriptedModel(
        rules=[Rule(pattern="wait", replies=[_wait_call, Reply(text="Done waiting.")])],
        default=Reply(text="Ask me to wait some seconds."),
    ),
    tools=[wait],
)
