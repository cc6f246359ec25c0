"""The home page imports the `adk web` stores of the agents folder, and follows one as it grows."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from google.adk.cli.utils.local_storage import create_local_session_service
from google.adk.events import Event, EventActions
from google.genai import types

from sessions_app.models import Session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP = "shop_agent"


def _source(agents: Path):
    return create_local_session_service(base_dir=agents, per_agent=True)


def _write(agents: Path, text: str, *, create: bool = False) -> None:
    async def write() -> None:
        service = _source(agents)
        if create:
            await service.create_session(app_name=APP, user_id="dev", session_id="from-adk-web", state={"cart": []})
        session = await service.get_session(app_name=APP, user_id="dev", session_id="from-adk-web")
        content = types.Content(role="user", parts=[types.Part(text=text)])
        await service.append_event(session, Event(author="user", content=content,
                                                  actions=EventActions(state_delta={"last": text})))

    # In a thread of its own: Playwright keeps an event loop running on this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, write()).result()


@pytest.fixture
def agents(tmp_path: Path, settings) -> Path:
    folder = tmp_path / "agents"
    (folder / APP).mkdir(parents=True)
    settings.ADKUI_AGENTS_DIR = str(folder)
    _write(folder, "first message", create=True)
    return folder


def test_import_then_follow_from_the_home_page(live_server, page, agents) -> None:
    page.goto(live_server.url + "/")
    row = page.locator("#local-stores tr", has_text=APP)
    row.get_by_role("button", name="Import").click()
    page.locator("#local-stores").get_by_text("sessions: 1 new").wait_for()
    page.locator("#local-stores").get_by_role("link", name=f"open {APP}").click()
    page.get_by_text("from-adk-web").first.wait_for()
    assert Session.objects.get(session_id="from-adk-web").imported_from

    page.goto(live_server.url + "/")
    row = page.locator("#local-stores tr", has_text=APP)
    row.get_by_label("keep following").check()
    row.get_by_role("button", name="Import").click()
    page.locator("#local-stores").get_by_text("following").wait_for()
    _write(agents, "second message")  # the agent goes on writing to its own store
    page.locator("#local-stores").get_by_text("events: 1 new").wait_for(timeout=15_000)
    page.locator("#local-stores").get_by_role("button", name="stop").click()
    page.locator("#local-stores").get_by_role("button", name="Import").wait_for()
    assert page.js_errors == []
