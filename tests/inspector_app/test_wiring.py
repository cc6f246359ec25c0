"""The recorder as `runtime_app.runners.make_runner` wires it, tried on the chat's own run path."""
from __future__ import annotations

import warnings

import pytest
from asgiref.sync import sync_to_async
from google.adk.apps.app import App as AdkApp
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.genai import types

from runtime_app import agents
from inspector_app.models import AgentRun, ModelCall, ToolCall
from inspector_app.plugin import app_with_recorder
from runtime_app import runs
from sessions_app.models import Event
from sessions_app.keys import SessionKey

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def counts() -> tuple[int, int, int, int]:
    return (Event.objects.count(), ModelCall.objects.count(), ToolCall.objects.count(), AgentRun.objects.count())


async def test_a_chat_turn_through_the_runtime_runner_is_recorded(service):
    await service.create_session(app_name="trip_planner", user_id="ann", session_id="w1", state={"user:name": "Ann"})
    request = runs.RunRequest(key=SessionKey("trip_planner", "ann", "w1"), streaming=True,
                              new_message=types.Content(role="user", parts=[types.Part(text="Plan a trip to Kyoto")]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no deprecated `plugins=` argument
        run = runs.run_agent(request)
        [_ async for _ in run]

    assert run.error is None
    assert await counts() == (4, 2, 1, 1)
    first = await sync_to_async(ModelCall.objects.order_by("started_at").first)()
    assert "You plan trips for Ann." in first.request["system_instruction"]
    assert first.first_chunk_ms is None  # a function call: nothing streamed


@pytest.mark.django_db  # builds a runner only: nothing to commit
def test_a_loaded_app_keeps_its_own_plugins_and_gains_the_recorder():
    class Own(BasePlugin):
        pass

    app = AdkApp(name="my_app", root_agent=agents.load("trip_planner").root, plugins=[Own(name="own")])
    runner = Runner(app=app_with_recorder(app, app_name="my_app"), app_name="my_app", session_service=None)
    assert [p.name for p in runner.plugin_manager.plugins] == ["own", "adkui_recorder"]
    assert [p.name for p in app.plugins] == ["own"]
