"""The faster append path (issue #16) keeps every guarantee of `event_append`.

On SQLite the session lookup also reads the stored copy of the event id, the
state mark and the shared scopes' state (`_append_sql.Statements.lock_session`);
the statements go to the driver's cursor; migration 0009 drops indexes that a
composite index already covers. These tests hold each to what it replaced.
"""
from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app import _append_sql, selectors
from sessions_app.models import AppState, StateChange, UserState
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = pytest.mark.django_db(transaction=True)

APP = "perf_app"


def event(text: str, delta: dict | None = None, **kwargs) -> Event:
    return Event(
        invocation_id="inv-1", author="agent", content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}), **kwargs,
    )


def test_a_retried_event_is_refused_and_nothing_is_written(service):
    session = service.create_session_sync(app_name=APP, user_id="u")
    first = event("once", {"n": 1, "user:n": 1})
    service.append_event_sync(session, first)
    retry = event("again", {"n": 2, "user:n": 2}, id=first.id, timestamp=first.timestamp + 1)
    reread = service.get_session_sync(app_name=APP, user_id="u", session_id=session.id)
    with pytest.raises(AlreadyExistsError, match="already stored as #1"):
        service.append_event_sync(reread, retry)
    stored = service.get_session_sync(app_name=APP, user_id="u", session_id=session.id)
    assert [e.id for e in stored.events] == [first.id]
    assert stored.state == {"n": 1, "user:n": 1}
    assert StateChange.objects.filter(seq=2).count() == 0


def test_a_stale_copy_is_refused_before_anything_is_written(service):
    session = service.create_session_sync(app_name=APP, user_id="u")
    copy = service.get_session_sync(app_name=APP, user_id="u", session_id=session.id)
    service.append_event_sync(session, event("first", {"user:n": 1}))
    with pytest.raises(StaleSessionError):
        service.append_event_sync(copy, event("late", {"user:n": 2}))
    assert UserState.objects.get(user_id="u").state == {"n": 1}
    assert EventRow.objects.count() == 1


def test_a_missing_scope_row_is_created_by_the_append(service):
    """Sessions stored before the scope rows existed: the prefetch finds NULL, the append makes the row."""
    session = service.create_session_sync(app_name=APP, user_id="u")
    UserState.objects.all().delete()
    AppState.objects.all().delete()
    service.append_event_sync(session, event("e", {"user:a": 1, "app:b": 2, "c": 3}))
    assert UserState.objects.get(user_id="u").state == {"a": 1}
    assert AppState.objects.get().state == {"b": 2}
    stored = service.get_session_sync(app_name=APP, user_id="u", session_id=session.id)
    assert stored.state == {"app:b": 2, "user:a": 1, "c": 3}


def test_shared_state_as_of_each_event_counts_other_sessions_changes(service):
    """The state mark read with the session row places each event among other sessions' changes."""
    one = service.create_session_sync(app_name=APP, user_id="u")
    two = service.create_session_sync(app_name=APP, user_id="u")
    service.append_event_sync(one, event("1", {"user:x": 1, "app:y": "a"}))
    service.append_event_sync(two, event("2", {"user:x": 2}))
    service.append_event_sync(one, event("3", {"s": True}))
    service.append_event_sync(two, event("4", {"app:y": "b"}))
    row_one = SessionRow.objects.get(session_id=one.id)
    row_two = SessionRow.objects.get(session_id=two.id)
    assert selectors.state_as_of(row_one, 1).merged() == {"user:x": 1, "app:y": "a"}
    assert selectors.state_as_of(row_two, 1).merged() == {"user:x": 2, "app:y": "a"}
    assert selectors.state_as_of(row_one, 2).merged() == {"user:x": 2, "app:y": "a", "s": True}
    assert selectors.state_as_of(row_two, 2).merged() == {"user:x": 2, "app:y": "b"}


def test_change_rows_and_the_session_row_are_written_as_before(service):
    session = service.create_session_sync(app_name=APP, user_id="u", state={"k": 0})
    service.append_event_sync(session, event("e", {"k": 1, "user:u": "x", "app:a": None}))
    rows = list(StateChange.objects.filter(seq=1).order_by("id").values_list(
        "scope", "key", "old_value", "new_value", "existed_before", "event__seq", "session__session_id"))
    assert rows == [
        ("app", "a", None, None, False, 1, session.id),
        ("user", "u", None, "x", False, 1, session.id),
        ("session", "k", 0, 1, True, 1, session.id),
    ]
    row = SessionRow.objects.get(session_id=session.id)
    assert (row.revision, row.state, row.turn_count) == (1, {"k": 1}, 0)


def test_database_errors_on_the_drivers_cursor_are_djangos(service):
    """Statements skip Django's cursor wrapper, not its error translation (callers catch django.db errors)."""
    session = service.create_session_sync(app_name=APP, user_id="u")
    service.append_event_sync(session, event("e"))
    row = EventRow.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        _append_sql.Statements(cursor).insert_event(row, '{"id": "again"}')  # same (session, seq)


def test_0009_leaves_each_foreign_key_covered_by_a_composite_index():
    with connection.cursor() as cursor:
        events = connection.introspection.get_constraints(cursor, EventRow._meta.db_table)
        changes = connection.introspection.get_constraints(cursor, StateChange._meta.db_table)
    single = {tuple(c["columns"]) for c in [*events.values(), *changes.values()] if c["index"] and not c["unique"]}
    assert ("session_id",) not in single and ("app_id",) not in single
    assert ("event_id",) in single  # changes_by_event and SET NULL on delete still have theirs
    leading = [c["columns"][:1] for c in events.values() if len(c["columns"]) > 1] + [
        c["columns"][:1] for c in changes.values() if len(c["columns"]) > 1]
    assert ["session_id"] in leading and ["app_id"] in leading


def test_rewind_events_are_still_found_by_the_partial_index(service):
    session = service.create_session_sync(app_name=APP, user_id="u")
    service.append_event_sync(session, event("a"))
    rewind = Event(invocation_id="inv-2", author="user", actions=EventActions(rewind_before_invocation_id="inv-1"))
    service.append_event_sync(session, rewind)
    rewinds = EventRow.objects.filter(session__session_id=session.id, rewind_before__isnull=False)
    assert list(rewinds.values_list("seq", "rewind_before")) == [(2, "inv-1")]


def test_state_as_of_sets_back_each_shared_key_of_many_past_later_changes(service):
    """Each key's first later change, looked up key by key and 100 keys to a statement, gives what
    grouping every later change gave: more keys than a statement takes, the event's own changes
    kept, keys made later dropped."""
    one = service.create_session_sync(app_name=APP, user_id="u")
    two = service.create_session_sync(app_name=APP, user_id="u")
    keys = [f"k{i:03d}" for i in range(130)]
    service.append_event_sync(one, event("1", {f"app:{k}": 1 for k in keys} | {"user:a": 1}))
    service.append_event_sync(two, event("2", {f"app:{k}": 2 for k in keys} | {"user:a": 2, "app:new": 0}))
    service.append_event_sync(one, event("3", {f"app:{k}": 3 for k in keys[:50]} | {"user:a": 3}))
    row_one = SessionRow.objects.get(session_id=one.id)
    row_two = SessionRow.objects.get(session_id=two.id)
    first = selectors.state_as_of(row_one, 1)
    assert first.app == {k: 1 for k in keys} and first.user == {"a": 1}
    second = selectors.state_as_of(row_two, 1)
    assert second.app == {k: 2 for k in keys} | {"new": 0} and second.user == {"a": 2}
    assert selectors.state_as_of(row_one, 2).app == {k: 3 if k < "k050" else 2 for k in keys} | {"new": 0}
    assert selectors.state_as_of(row_one, 0).app == {} and selectors.state_as_of(row_one, 0).user == {}


def _plan(queryset) -> str:
    """The query plan of `queryset`; on PostgreSQL as for a big table (a few rows are read whole)."""
    if connection.vendor != "postgresql":
        return queryset.explain()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def test_a_keys_changes_in_order_are_read_off_an_index_without_a_sort(service):
    """An `app:` key's history and first change after an event, and a `user:` key's of one user,
    come off an index in change order: no read of every change of the app or user, no sort."""
    session = service.create_session_sync(app_name=APP, user_id="u")
    service.append_event_sync(session, event("1", {"app:y": 1, "user:x": 1}))
    row = SessionRow.objects.get(session_id=session.id)
    app = row.app
    app_key = selectors.key_history(app=app, full_key="app:y")[:51]
    user_key = selectors.key_history(app=app, full_key="user:x", user_id="u")[:51]
    later = StateChange.objects.filter(app=app, id__gt=0).exclude(session=row, seq=1)
    first_app = selectors.first_change(later.filter(scope="app"), "y")
    first_user = selectors.first_change(later.filter(scope="user", user_id="u"), "x")
    # A `user:` key's: on a table this small PostgreSQL may read it off either index, so only the
    # order (no sort) is held there; with `id` left out of `change_key_history` it sorted.
    either = ("change_key_history", "change_key_order")
    for queryset, indexes in ((app_key, ("change_key_order",)), (first_app, ("change_key_order",)),
                              (user_key, either), (first_user, either)):
        plan = _plan(queryset)
        assert any(index in plan for index in indexes), plan
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
