"""Our artifact and memory services beside ADK's own, on the points where they differed (#29)."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from google.adk.artifacts import FileArtifactService, InMemoryArtifactService
from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.platform import time as platform_time
from google.adk.sessions import InMemorySessionService
from google.genai import types

pytestmark = pytest.mark.django_db

APP, USER = "parity_app", "ann"
HELLO = types.Part(text="hello")


def test_a_padded_session_id_names_the_session_adk_makes_of_it(artifacts):
    """ADK's session services strip a padded id, so the Runner asks for artifacts under the stripped one."""
    adk_session = async_to_sync(InMemorySessionService().create_session)(app_name=APP, user_id=USER, session_id=" s1 ")
    assert adk_session.id == "s1"
    artifacts.save_artifact_sync(app_name=APP, user_id=USER, session_id=" s1 ", filename="a.txt", artifact=HELLO)
    assert artifacts.load_artifact_sync(app_name=APP, user_id=USER, session_id=adk_session.id, filename="a.txt") == HELLO
    assert artifacts.list_artifact_keys_sync(app_name=APP, user_id=USER, session_id="s1") == ["a.txt"]


@pytest.mark.parametrize("filename", ["user:notes.txt", "report.txt"])
def test_the_canonical_uri_has_the_shape_of_adks_in_memory_service(artifacts, filename):
    """A user-scoped name keeps its `user:` prefix, which ADK's other services read the scope from."""
    adk = InMemoryArtifactService()
    async_to_sync(adk.save_artifact)(app_name=APP, user_id=USER, session_id="s1", filename=filename, artifact=HELLO)
    theirs = async_to_sync(adk.get_artifact_version)(app_name=APP, user_id=USER, session_id="s1", filename=filename)
    artifacts.save_artifact_sync(app_name=APP, user_id=USER, session_id="s1", filename=filename, artifact=HELLO)
    ours = artifacts.get_artifact_version_sync(app_name=APP, user_id=USER, session_id="s1", filename=filename)
    assert ours.canonical_uri.removeprefix("artifact://") == theirs.canonical_uri.removeprefix("memory://")


def test_create_time_comes_from_adks_pluggable_clock(artifacts, tmp_path):
    adk = FileArtifactService(root_dir=tmp_path / "adk")
    platform_time.set_time_provider(lambda: 1_234_567.5)
    try:
        async_to_sync(adk.save_artifact)(app_name=APP, user_id=USER, session_id="s1", filename="a.txt", artifact=HELLO)
        artifacts.save_artifact_sync(app_name=APP, user_id=USER, session_id="s1", filename="a.txt", artifact=HELLO)
    finally:
        platform_time.reset_time_provider()
    theirs = async_to_sync(adk.get_artifact_version)(app_name=APP, user_id=USER, session_id="s1", filename="a.txt")
    ours = artifacts.get_artifact_version_sync(app_name=APP, user_id=USER, session_id="s1", filename="a.txt")
    assert ours.create_time == theirs.create_time == 1_234_567.5


def _said(text: str, timestamp: float) -> Event:
    return Event(author="user", timestamp=timestamp, content=types.Content(role="user", parts=[types.Part(text=text)]))


def test_equally_scored_memories_come_in_the_order_they_were_added_as_in_adks_in_memory_service(memory):
    """Newer events added later, older ones added later still: the order follows adding, not time."""
    texts = ["Lisbon one", "Lisbon two", "Lisbon three"]
    batches = [[_said(texts[0], 1_700_000_500.0)], [_said(texts[1], 1_700_000_900.0)], [_said(texts[2], 1_700_000_100.0)]]
    adk = InMemoryMemoryService()
    for index, events in enumerate(batches):
        async_to_sync(adk.add_events_to_memory)(app_name=APP, user_id=USER, session_id=f"s{index}", events=events)
        memory.add_events_to_memory_sync(app_name=APP, user_id=USER, session_id=f"s{index}", events=events)
    theirs = async_to_sync(adk.search_memory)(app_name=APP, user_id=USER, query="lisbon")
    ours = memory.search_memory_sync(app_name=APP, user_id=USER, query="lisbon")
    assert [m.content.parts[0].text for m in ours.memories] == [m.content.parts[0].text for m in theirs.memories] == texts
