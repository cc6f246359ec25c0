"""Replaying a session against the agent's current code, and the pages that start and compare it.

The agents live in a temporary agents folder, written as files, so a test can
change an agent's code between the original run and the replay, as a
developer editing `agent.py` does.
"""
from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient
from google.genai import types

from eval_app.models import EvalCase
from eval_app.selectors import adk_eval_case
from runtime_app import agents, replay, runs
from sessions_app.keys import SessionKey
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from tests.conftest import async_wait_until

AGENT = '''"""A probe agent for the replay tests, on the scripted model."""
import asyncio
from pathlib import Path

from google.adk.agents import LlmAgent

from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel


def lookup(city: str) -> dict:
    """Look a city up."""
    return {{"city": city, "found": True}}


def forecast(city: str, days: int) -> dict:
    """The forecast for a city."""
    return {{"city": city, "days": days, "sky": "grey"}}


def explode(city: str) -> dict:
    """A tool that fails."""
    raise RuntimeError("the weather station is on fire")


async def hold(city: str) -> dict:
    """Answers once the test lets it: a file named "gate" appears in the agents folder."""
    while not (Path(__file__).parent.parent / "gate").exists():
        await asyncio.sleep(0.01)
    return {{"city": city, "held": True}}


root_agent = LlmAgent(
    name="probe",
    model=ScriptedModel(
        rules=[Rule(pattern="weather", replies=[Reply(function_calls=[Call({tool!r}, {args!r})]), Reply(text={text!r})])],
        default=Reply(text="Hello there."),
    ),
    tools=[lookup, forecast, explode, hold],
    output_key="answer",
)
'''


def write_agent(folder: Path, name: str, *, tool: str, args: dict[str, Any], text: str) -> None:
    """Write (or rewrite) agent package `name` in the agents folder `folder`."""
    package = folder / name
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("from . import agent  # noqa: F401\n")
    (package / "agent.py").write_text(AGENT.format(tool=tool, args=args, text=text))


@pytest.fixture
def agents_folder(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """An agents folder of its own holding agent `probe_<hex>` (a name no other test imports)."""
    # No .pyc: a rewrite within the same second and of the same size would load the old bytecode.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    name = f"probe_{uuid.uuid4().hex[:8]}"
    write_agent(tmp_path, name, tool="lookup", args={"city": "Oslo"}, text="It is cold in Oslo.")
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    yield tmp_path, name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def run_turn(key: SessionKey, text: str, state_delta: dict[str, Any] | None = None) -> None:
    async def go() -> None:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runs.run_agent(runs.RunRequest(key=key, new_message=message, state_delta=state_delta)):
            pass

    async_to_sync(go)()


GREETING_THEN_WEATHER = (("Hi", None), ("What is the weather in Oslo?", {"mood": "curious"}))


def original_session(service: Any, app_name: str, turns: tuple = GREETING_THEN_WEATHER) -> SessionRow:
    """A session of `turns` (message, state delta), by default "Hi" then a weather question, with initial state."""
    session = service.create_session_sync(app_name=app_name, user_id="ann", state={"budget": 100, "user:tier": "gold"})
    key = SessionKey(app_name, "ann", session.id)
    for text, delta in turns:
        run_turn(key, text, state_delta=delta)
    return SessionRow.objects.select_related("app").get(session_id=session.id)


def replay_to_the_end(original: SessionRow) -> SessionRow:
    async_to_sync(replay.replay_run)(replay.replay_create(session=original))
    return SessionRow.objects.select_related("app", "replay_of", "replay_of__app").get(replay_of=original)


# ---- the replay itself -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_a_replay_runs_the_changed_agent_and_the_diff_shows_the_new_trajectory(service, agents_folder):
    folder, name = agents_folder
    original = original_session(service, name)
    write_agent(folder, name, tool="forecast", args={"city": "Oslo", "days": 3}, text="Grey skies in Oslo.")

    replayed = replay_to_the_end(original)

    assert (replayed.app_id, replayed.user_id, replayed.replay_of_id) == (original.app_id, "ann", original.pk)
    context = replay.comparison(replayed)
    first, second = context["diffs"]
    assert not first.changed  # "Hi": the same greeting from the old and the new code
    assert second.original.calls == [{"name": "lookup", "args": {"city": "Oslo"}}]
    assert second.replay.calls == [{"name": "forecast", "args": {"city": "Oslo", "days": 3}}]
    assert second.tools_changed and second.response_changed and second.changed
    assert ("answer", "It is cold in Oslo.", "Grey skies in Oslo.") in second.state.changed  # the agent's output_key
    assert context["changed_count"] == 1
    status = context["status"]
    assert (status.total, status.replayed, status.running, status.complete) == (2, 2, False, True)


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_a_replay_that_ends_while_its_page_reads_it_still_shows_as_running(service, agents_folder, monkeypatch):
    """The page stops polling once a replay shows as finished, so what it shows as finished must
    be all of it: a run that ends while the page reads the turns is shown as still running (the
    next poll shows its end), never as finished with the turns read before its last event."""
    _, name = agents_folder
    replayed = replay_to_the_end(original_session(service, name))
    monkeypatch.setitem(replay._progress, replayed.pk, replay.Progress())  # still running as the page starts
    read_turns = replay.turns_of

    def turns_then_the_run_ends(session):
        turns = read_turns(session)
        if session.pk == replayed.pk:
            replay._progress.pop(replayed.pk, None)  # the run's last event was stored, and it ended, just now
        return turns

    monkeypatch.setattr(replay, "turns_of", turns_then_the_run_ends)
    status = replay.comparison(replayed)["status"]
    assert status.running
    assert not replay.comparison(replayed)["status"].running  # the next poll: finished


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_the_replay_starts_from_the_original_initial_state_and_resends_state_deltas(service, agents_folder):
    _, name = agents_folder
    original = original_session(service, name)

    replayed = replay_to_the_end(original)

    user_events = EventRow.objects.filter(session=replayed, author="user").order_by("seq")
    assert [e.data["content"]["parts"][0]["text"] for e in user_events] == ["Hi", "What is the weather in Oslo?"]
    assert user_events[1].data["actions"]["state_delta"] == {"mood": "curious"}
    # Session keys as at the original's creation; the shared `user:` key is not written again.
    assert EventRow.objects.filter(session=replayed).count() == EventRow.objects.filter(session=original).count()
    initial = replayed.state_changes.filter(seq=0)
    assert [(c.scope, c.key, c.new_value) for c in initial] == [("session", "budget", 100)]
    assert replayed.state["budget"] == 100 and replayed.state["mood"] == "curious"


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_a_failing_turn_is_recorded_as_its_error_and_the_replay_goes_on(service, agents_folder):
    folder, name = agents_folder
    session = service.create_session_sync(app_name=name, user_id="ann")
    key = SessionKey(name, "ann", session.id)
    run_turn(key, "How is the weather in Oslo?")
    run_turn(key, "Hi")
    original = SessionRow.objects.select_related("app").get(session_id=session.id)
    write_agent(folder, name, tool="explode", args={"city": "Oslo"}, text="unreachable")

    replayed = replay_to_the_end(original)

    first, second = replay.comparison(replayed)["diffs"]
    assert first.replay.errors and "the weather station is on fire" in " ".join(first.replay.errors)
    assert first.errors_changed and first.changed
    assert second.replay is not None and second.replay.response == "Hello there." and not second.changed


@pytest.mark.django_db
def test_reload_picks_up_an_edited_agent(agents_folder):
    folder, name = agents_folder
    assert agents.load(name).root.tools[0].__name__ == "lookup"
    write_agent(folder, name, tool="forecast", args={"city": "Oslo", "days": 1}, text="edited")
    assert agents.load(name).root.model.rules[0].replies[1].text == "It is cold in Oslo."  # load keeps its cache
    assert agents.reload(name).root.model.rules[0].replies[1].text == "edited"


# ---- refusals: nothing is created ----------------------------------------------------------


@pytest.mark.django_db
def test_an_unknown_session_is_a_404(client):
    assert client.post("/sessions/987654/replay/start/").status_code == 404
    assert client.get("/sessions/987654/replay/").status_code == 404
    assert not SessionRow.objects.exists()


@pytest.mark.django_db
def test_a_session_of_an_app_without_an_agent_is_refused(client, service):
    service.create_session_sync(app_name="no_such_agent", user_id="ann", session_id="s")
    row = SessionRow.objects.get()
    response = client.post(f"/sessions/{row.pk}/replay/start/")
    assert response.status_code == 400
    assert "No agent named &#x27;no_such_agent&#x27;" in response.content.decode()
    assert SessionRow.objects.count() == 1


@pytest.mark.django_db
def test_an_agent_that_no_longer_loads_is_refused(client, service, agents_folder):
    folder, name = agents_folder
    original = original_session(service, name)
    (folder / name / "agent.py").write_text("raise ImportError('half-edited agent')\n")
    response = client.post(f"/sessions/{original.pk}/replay/start/")
    assert response.status_code == 400
    assert "failed to load" in response.content.decode() and "half-edited agent" in response.content.decode()
    assert SessionRow.objects.count() == 1


@pytest.mark.django_db
def test_a_session_without_user_messages_is_refused(client, service, agents_folder):
    _, name = agents_folder
    service.create_session_sync(app_name=name, user_id="ann", session_id="empty")
    row = SessionRow.objects.get()
    response = client.post(f"/sessions/{row.pk}/replay/start/")
    assert response.status_code == 400 and "no user messages" in response.content.decode()
    assert SessionRow.objects.count() == 1


@pytest.mark.django_db
def test_the_comparison_of_a_session_that_is_no_replay_is_a_404(client, service):
    service.create_session_sync(app_name="trip_planner", user_id="ann", session_id="plain")
    row = SessionRow.objects.get()
    assert client.get(f"/sessions/{row.pk}/replay/").status_code == 404
    assert client.get("/sessions/x/replay/").status_code == 404
    assert client.get(f"/sessions/{row.pk}/replay/start/").status_code == 405


# ---- pages ---------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_the_pages_link_the_replay_and_its_original(client, service, agents_folder):
    folder, name = agents_folder
    original = original_session(service, name)
    write_agent(folder, name, tool="forecast", args={"city": "Oslo", "days": 3}, text="Grey skies in Oslo.")
    replayed = replay_to_the_end(original)

    original_page = client.get(f"/sessions/{original.pk}/").content.decode()
    assert f'action="/sessions/{original.pk}/replay/start/"' in original_page and 'id="replay-start"' in original_page
    replay_page = client.get(f"/sessions/{replayed.pk}/").content.decode()
    assert f'href="/sessions/{original.pk}/"' in replay_page and original.session_id in replay_page
    assert re.search(r"replay</span> of\s*<a", replay_page) and f"/sessions/{replayed.pk}/replay/" in replay_page

    comparison = client.get(f"/sessions/{replayed.pk}/replay/").content.decode()
    assert original.session_id in comparison and replayed.session_id in comparison
    assert 'id="turn-2"' in comparison and "tools changed" in comparison and "hx-trigger" not in comparison
    turns = client.get(f"/sessions/{replayed.pk}/replay/", headers={"HX-Request": "true"}).content.decode()
    assert turns.lstrip().startswith('<section id="replay-turns"') and "<html" not in turns


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_the_eval_button_turns_the_original_into_a_case(client, service, agents_folder):
    _, name = agents_folder
    original = original_session(service, name)
    replayed = replay_to_the_end(original)
    page = client.get(f"/sessions/{replayed.pk}/replay/").content.decode()
    form = re.search(r'<form class="replay-eval"[^>]*hx-post="([^"]+)".*?</form>', page, re.S)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(0)))

    response = client.post(form.group(1), fields, headers={"HX-Request": "true"})

    assert response.status_code == 200 and "Added case" in response.content.decode()
    case = EvalCase.objects.select_related("eval_set").get()
    assert case.eval_set.app_name == name and case.eval_id == fields["eval_id"]
    assert [turn.user_content.parts[0].text for turn in adk_eval_case(case).conversation] == ["Hi", "What is the weather in Oslo?"]


async def start_held_replay(client: AsyncClient, service: Any, folder: Path, name: str,
                            turns: tuple = GREETING_THEN_WEATHER) -> tuple[SessionRow, str]:
    """Run the original, change its weather tool to one that holds until the gate opens, press Replay."""
    original = await sync_to_async(original_session)(service, name, turns)
    write_agent(folder, name, tool="hold", args={"city": "Oslo"}, text="Held in Oslo.")
    response = await client.post(f"/sessions/{original.pk}/replay/start/")
    replayed = await SessionRow.objects.aget(replay_of=original)
    assert response.status_code == 303 and response["Location"] == f"/sessions/{replayed.pk}/replay/"
    return replayed, response["Location"]


async def comparison_when(client: AsyncClient, url: str, text: str) -> str:
    async def shows() -> str | bool:
        page = (await client.get(url, headers={"HX-Request": "true"})).content.decode()
        return text in page and page

    return await async_wait_until(shows, timeout=30)


@pytest.mark.django_db(transaction=True)
async def test_the_replay_button_starts_a_background_replay_and_the_page_follows_it(agents_folder, service):
    folder, name = agents_folder
    client = AsyncClient()
    _, url = await start_held_replay(client, service, folder, name)

    running = await comparison_when(client, url, "replaying: turn 2 of 2")
    assert 'hx-trigger="every 1s"' in running  # the page polls while the replay runs
    (folder / "gate").touch()

    page = await comparison_when(client, url, "finished: 2 turns replayed")
    assert "hx-trigger" not in page  # and stops polling once it has ended
    assert "tools changed" in page and "hold" in page and "Held in Oslo." in page


@pytest.mark.django_db(transaction=True)
async def test_stop_ends_the_replay_after_its_current_turn(agents_folder, service):
    folder, name = agents_folder
    client = AsyncClient()
    weather_then_greeting = (("What is the weather in Oslo?", None), ("Hi", None))
    replayed, url = await start_held_replay(client, service, folder, name, weather_then_greeting)
    await comparison_when(client, url, "replaying: turn 1 of 2")

    stopped = await client.post(f"/sessions/{replayed.pk}/replay/stop/")
    assert stopped.status_code == 303 and stopped["Location"] == url
    (folder / "gate").touch()  # the held tool returns; ADK then ends the aborted invocation

    page = await comparison_when(client, url, "not running: 1 of 2 turns replayed")
    assert "hx-trigger" not in page and "its last turn did not finish" in page
    assert await EventRow.objects.filter(session=replayed, author="user").acount() == 1  # "Hi" was never sent


@pytest.mark.django_db
def test_stopping_a_replay_that_is_not_running_just_shows_the_page(client, service, agents_folder, on_commit_callbacks):
    _, name = agents_folder
    original = original_session(service, name)
    replayed = replay_to_the_end(original)
    response = client.post(f"/sessions/{replayed.pk}/replay/stop/")
    assert response.status_code == 303 and response["Location"] == f"/sessions/{replayed.pk}/replay/"
    assert not replay.replay_stop(replay=replayed)
