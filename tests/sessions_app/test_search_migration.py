"""Migration 0008 indexes the events stored before it, and undoing it leaves nothing behind."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app.models import App
from sessions_app.search import search_events

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0007_session_health")]


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


def search_objects() -> set[str]:
    """The names of what 0008 puts in the database."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sessions_app_event_search%'")
            return {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname = 'sessions_app_event_search'"
                       " UNION ALL SELECT proname FROM pg_proc WHERE proname = 'sessions_app_event_search_vector'")
        return {row[0] for row in cursor.fetchall()}


INSTALLED = {
    "sqlite": {"sessions_app_event_search", "sessions_app_event_search_insert", "sessions_app_event_search_delete",
               "sessions_app_event_search_update"}
    | {f"sessions_app_event_search_{shadow}" for shadow in ("data", "idx", "docsize", "config")},  # FTS5's own
    "postgresql": {"sessions_app_event_search", "sessions_app_event_search_vector"},
}


def history() -> list[AdkEvent]:
    call = types.Part(function_call=types.FunctionCall(id="c-1", name="book_flight", args={"to": "Lisbon"}))
    return [
        AdkEvent(author="user", invocation_id="inv-1",
                 content=types.Content(role="user", parts=[types.Part(text="a window seat please")])),
        AdkEvent(author="agent", invocation_id="inv-1", content=types.Content(role="model", parts=[call])),
        AdkEvent(author="agent", invocation_id="inv-1", actions=EventActions(state_delta={"user:seat": "14A"})),
    ]


def store_before_0008(apps) -> None:
    """Events as the schema before 0008 held them, written with that schema's models."""
    OldApp, OldSession, OldEvent = (apps.get_model("sessions_app", n) for n in ("App", "Session", "Event"))
    app = OldApp.objects.create(name="old_app")
    session = OldSession.objects.create(app=app, user_id="ann", session_id="old", create_time=1.0, update_time=2.0,
                                        revision=len(history()))
    for seq, event in enumerate(history(), start=1):
        OldEvent.objects.create(session=session, seq=seq, event_id=event.id, invocation_id=event.invocation_id,
                                author=event.author, timestamp=event.timestamp,
                                data=event.model_dump(mode="json", exclude_none=True))


def test_every_migration_applied_leaves_the_index_and_its_upkeep_installed():
    # A later migration that remakes the event table on SQLite drops its triggers: this says so.
    assert search_objects() == INSTALLED[connection.vendor]


def test_0008_indexes_events_stored_before_it_and_unapplies_cleanly():
    executor = migrate(BEFORE)
    try:
        assert search_objects() == set()
        store_before_0008(executor.loader.project_state(BEFORE).apps)
    finally:
        migrate(executor.loader.graph.leaf_nodes())
    assert search_objects() == INSTALLED[connection.vendor]
    app = App.objects.get(name="old_app")
    for query, seq in [("window seat", 1), ("book_flight Lisbon", 2), ("seat 14A", 3)]:
        assert [hit.seq for hit in search_events(app, query).hits] == [seq], query
    app.sessions.get().delete()
    assert search_events(app, "window").hits == []
