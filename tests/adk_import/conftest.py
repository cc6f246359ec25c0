from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from google.adk.cli.utils.local_storage import create_local_artifact_service, create_local_session_service
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from adkui.adk import DjangoSessionService
from runtime_app.demo_agents.trip_planner.agent import root_agent

APP = "trip_planner"


async def run_turns(service: BaseSessionService, *, user: str, session_id: str, messages: list[str],
                    state: dict[str, Any] | None = None, app: str = APP) -> None:
    """A real ADK Runner on the scripted demo agent, writing to ADK's own service."""
    if await service.get_session(app_name=app, user_id=user, session_id=session_id) is None:
        await service.create_session(app_name=app, user_id=user, session_id=session_id, state=state)
    runner = Runner(app_name=app, agent=root_agent, session_service=service)
    for text in messages:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id=user, session_id=session_id, new_message=message):
            pass


def dump(events: list[Event]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude_none=True) for e in events]


def assert_same_as_source(source: BaseSessionService, *, app: str, user: str, session_id: str) -> None:
    theirs = asyncio.run(source.get_session(app_name=app, user_id=user, session_id=session_id))
    ours = DjangoSessionService().get_session_sync(app_name=app, user_id=user, session_id=session_id)
    assert ours is not None
    assert (ours.id, ours.app_name, ours.user_id) == (theirs.id, theirs.app_name, theirs.user_id)
    assert dump(ours.events) == dump(theirs.events)
    assert ours.state == theirs.state


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """An agents folder as `adk web` leaves it: <agents>/trip_planner/.adk/{session.db,artifacts}."""
    agents = tmp_path / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "__init__.py").write_text("")
    return agents


def adk_web_services(agents: Path) -> tuple[BaseSessionService, Any]:
    """The services `adk web AGENTS_DIR` uses by default (per-agent local storage)."""
    return (create_local_session_service(base_dir=agents, per_agent=True),
            create_local_artifact_service(base_dir=agents, per_agent=True))
