"""DjangoMemoryService against ADK 2.13's BaseMemoryService contract."""
from __future__ import annotations

import time

import pytest
from django.db import connection
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session as AdkSession
from google.genai import types

from memory_app import services
from memory_app.models import MemoryEvent, SessionMemory

pytestmark = pytest.mark.django_db(transaction=True)

APP, USER = "mem_app", "ann"


def said(author: str, text: str, **kw) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, content=types.Content(role=role, parts=[types.Part(text=text)]), **kw)


def adk_session(session_id: str, events: list[Event], *, app: str = APP, user: str = USER) -> AdkSession:
    return AdkSession(id=session_id, app_name=app, user_id=user, events=events)


def texts(response: SearchMemoryResponse) -> list[str]:
    return [m.content.parts[0].text for m in response.memories]


async def search(memory, query: str, *, app: str = APP, user: str = USER) -> SearchMemoryResponse:
    return await memory.search_memory(app_name=app, user_id=user, query=query)


async def test_it_finds_what_a_session_said_as_memory_entries(memory):
    event = said("user", "My cat is called Miso", timestamp=1_700_000_000.0)
    await memory.add_session_to_memory(adk_session("s1", [event, said("bot", "What a lovely cat")]))
    found = await search(memory, "what is my cat called?")
    assert isinstance(found, SearchMemoryResponse)
    assert all(isinstance(m, MemoryEntry) for m in found.memories)
    first = found.memories[0]
    assert first.content.parts[0].text == "My cat is called Miso"
    assert first.author == "user" and first.id
    assert first.custom_metadata == {"session_id": "s1", "event_id": event.id}
    assert first.timestamp.startswith("2023-11-1")  # ISO 8601, as ADK formats it
    assert texts(await search(memory, "dog")) == []


async def test_adding_a_session_again_is_idempotent(memory):
    session = adk_session("s1", [said("user", "apples and pears"), said("bot", "pears are nice")])
    for _ in range(3):
        await memory.add_session_to_memory(session)
    assert await MemoryEvent.objects.acount() == 2
    session.events.append(said("user", "and plums"))
    await memory.add_session_to_memory(session)
    assert await MemoryEvent.objects.acount() == 3
    assert len((await search(memory, "pears")).memories) == 2


async def test_search_is_scoped_to_the_app_and_the_user(memory):
    await memory.add_session_to_memory(adk_session("s1", [said("user", "secret banana plan")]))
    await memory.add_session_to_memory(adk_session("s2", [said("user", "bob's banana")], user="bob"))
    await memory.add_session_to_memory(adk_session("s3", [said("user", "other app banana")], app="other"))
    assert texts(await search(memory, "banana")) == ["secret banana plan"]
    assert texts(await search(memory, "banana", user="bob")) == ["bob's banana"]
    assert texts(await search(memory, "banana", app="other")) == ["other app banana"]
    assert texts(await search(memory, "banana", user="carol")) == []


async def test_results_are_ranked_by_relevance(memory):
    events = [
        said("user", "the weather in lisbon", timestamp=1.0),
        said("user", "lisbon trip with weather and food notes", timestamp=2.0),
        said("user", "food only", timestamp=3.0),
    ]
    await memory.add_session_to_memory(adk_session("s1", events))
    found = texts(await search(memory, "lisbon weather food"))
    assert found[0] == "lisbon trip with weather and food notes"
    assert set(found) == {e.content.parts[0].text for e in events}


@pytest.mark.skipif("connection.vendor == 'postgresql'", reason="keyword rules are SQLite's")
async def test_keyword_scoring_matches_whole_words_only(memory):
    await memory.add_session_to_memory(adk_session("s1", [said("user", "I write python daily")]))
    assert texts(await search(memory, "thon")) == []
    assert texts(await search(memory, "PYTHON")) == ["I write python daily"]
    await memory.add_session_to_memory(adk_session("s2", [said("user", "私はPythonを使う")]))
    assert "私はPythonを使う" in texts(await search(memory, "python"))


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="full-text search is PostgreSQL's")
async def test_postgres_full_text_search_stems_words(memory):
    await memory.add_session_to_memory(adk_session("s1", [said("user", "The cats were running home")]))
    assert texts(await search(memory, "cat run")) == ["The cats were running home"]
    assert texts(await search(memory, "the")) == []  # stop words alone match nothing


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the index is PostgreSQL's")
@pytest.mark.django_db
def test_postgres_has_a_gin_index_on_the_searched_expression():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_search_gin'")
        (definition,) = cursor.fetchone()
    assert "gin" in definition.lower() and "to_tsvector('english'::regconfig" in definition


async def test_the_number_of_results_is_capped(memory, settings):
    settings.ADKUI_MEMORY_MAX_RESULTS = 3
    await memory.add_session_to_memory(adk_session("s1", [said("user", f"note {i} about tea") for i in range(6)]))
    assert len((await search(memory, "tea")).memories) == 3


async def test_events_without_text_and_thoughts_are_not_remembered(memory):
    call = Event(author="bot", content=types.Content(role="model", parts=[types.Part.from_function_call(name="f", args={"q": "tea"})]))
    thought = Event(author="bot", content=types.Content(role="model", parts=[types.Part(text="private tea musing", thought=True)]))
    await memory.add_session_to_memory(adk_session("s1", [call, thought, Event(author="bot")]))
    assert await MemoryEvent.objects.acount() == 0
    assert texts(await search(memory, "tea")) == []
    assert texts(await search(memory, "")) == []


async def test_a_deleted_memory_stays_deleted_when_the_session_is_added_again(memory):
    session = adk_session("s1", [said("user", "forget this kiwi"), said("user", "keep this kiwi")])
    await memory.add_session_to_memory(session)
    victim = next(m for m in (await search(memory, "kiwi")).memories if "forget" in m.content.parts[0].text)
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=victim.id)
    await memory.add_session_to_memory(session)
    assert texts(await search(memory, "kiwi")) == ["keep this kiwi"]
    # Another user cannot delete it; unknown ids are ignored.
    kept = (await search(memory, "kiwi")).memories[0]
    await memory.delete_memory(app_name=APP, user_id="bob", memory_id=kept.id)
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="nope")
    await memory.delete_memory(app_name=APP, user_id=USER)
    assert texts(await search(memory, "kiwi")) == ["keep this kiwi"]


async def test_add_events_to_memory_adds_a_delta(memory):
    first = said("user", "mango one")
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[first])
    await memory.add_events_to_memory(
        app_name=APP, user_id=USER, session_id="s1", events=[first, said("user", "mango two")], custom_metadata={"ttl": 5}
    )
    found = (await search(memory, "mango")).memories
    assert sorted(texts(SearchMemoryResponse(memories=found))) == ["mango one", "mango two"]
    assert found[0].custom_metadata["ttl"] == 5
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[said("user", "mango three")])
    assert len((await search(memory, "mango")).memories) == 3


async def test_add_memory_stores_explicit_entries(memory):
    entry = MemoryEntry(
        id="fact-1", author="user", timestamp="2024-01-02T03:04:05",
        content=types.Content(role="user", parts=[types.Part(text="allergic to peanuts")]), custom_metadata={"kind": "fact"},
    )
    await memory.add_memory(app_name=APP, user_id=USER, memories=[entry], custom_metadata={"source": "test"})
    await memory.add_memory(app_name=APP, user_id=USER, memories=[entry])  # same id: updated, not duplicated
    found = (await search(memory, "peanuts")).memories
    assert len(found) == 1
    assert found[0].timestamp == "2024-01-02T03:04:05" and found[0].author == "user"
    assert found[0].custom_metadata == {"kind": "fact"}
    assert texts(await search(memory, "peanuts", user="bob")) == []


async def test_a_stored_session_records_how_far_it_was_offloaded(memory, service):
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    await service.append_event(stored, said("user", "remember the olive"))
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    await memory.add_session_to_memory(stored)
    record = await SessionMemory.objects.select_related("session").aget()
    assert (record.session.session_id, record.revision, record.event_count, record.reason) == ("s1", 1, 1, "agent")
    row = await MemoryEvent.objects.aget()
    assert row.source_session_id == record.session_id


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_sessions_idle_past_the_timeout_are_offloaded_before_a_search(settings):
    from adkui.adk import DjangoMemoryService, DjangoSessionService

    settings.ADKUI_MEMORY_OFFLOAD = ["timeout"]
    settings.ADKUI_MEMORY_IDLE_SECONDS = 60
    sessions, memory = DjangoSessionService(), DjangoMemoryService()
    for sid in ("old", "new"):
        s = sessions.create_session_sync(app_name=APP, user_id=USER, session_id=sid)
        sessions.append_event_sync(s, said("user", f"{sid} walnut", timestamp=time.time() - (600 if sid == "old" else 0)))
    assert texts(memory.search_memory_sync(app_name=APP, user_id=USER, query="walnut")) == ["old walnut"]
    assert SessionMemory.objects.get().reason == "timeout"
    # Offloaded once per revision: a second search writes nothing new.
    assert services.memory_offload_idle(app_name=APP, user_id=USER) == 0
    settings.ADKUI_MEMORY_OFFLOAD = []
    assert services.memory_offload_idle(app_name=APP, user_id=USER, now=time.time() + 3600) == 0


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_session_end_offloads_only_for_the_configured_reasons(settings):
    from adkui.adk import DjangoSessionService
    from sessions_app.models import Session

    sessions = DjangoSessionService()
    s = sessions.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    sessions.append_event_sync(s, said("user", "hazelnut"))
    row = Session.objects.select_related("app").get(session_id="s1")
    settings.ADKUI_MEMORY_OFFLOAD = "timeout"
    assert services.session_end(session=row, reason="reset") is False
    settings.ADKUI_MEMORY_OFFLOAD = "reset,timeout"
    assert services.session_end(session=row, reason="reset") is True
    assert SessionMemory.objects.get().reason == "reset"
    assert MemoryEvent.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("on_commit_callbacks")
def test_the_memory_offload_command_offloads_idle_sessions(settings):
    from django.core.management import call_command

    from adkui.adk import DjangoSessionService

    settings.ADKUI_MEMORY_IDLE_SECONDS = 0
    sessions = DjangoSessionService()
    s = sessions.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    sessions.append_event_sync(s, said("user", "pecan", timestamp=time.time() - 5))
    call_command("memory_offload")
    assert MemoryEvent.objects.filter(search_text__contains="pecan").exists()

