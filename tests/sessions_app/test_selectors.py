"""Time travel, diffs and key histories, read from the stored change rows."""
from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app import selectors
from sessions_app.models import App, StateChange
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "tt_app"


def append(service, session, delta):
    service.append_event_sync(session, Event(author="agent", actions=EventActions(state_delta=delta)))


def test_state_as_of_every_event_equals_what_was_read_at_the_time(service):
    rng = random.Random(7)
    a = service.create_session_sync(app_name=APP, user_id="ann", state={"x": 0, "user:u": 0, "app:a": 0})
    b = service.create_session_sync(app_name=APP, user_id="ann")
    c = service.create_session_sync(app_name=APP, user_id="bob")
    seen_by_a = {0: service.get_session_sync(app_name=APP, user_id="ann", session_id=a.id).state}
    keys = ["x", "y", "user:u", "user:v", "app:a", "app:b"]
    for step in range(60):
        writer = rng.choice([a, b, c])
        delta = {k: rng.choice([step, None, {"n": step}]) for k in rng.sample(keys, 2)}
        fresh = service.get_session_sync(app_name=APP, user_id=writer.user_id, session_id=writer.id)
        append(service, fresh, delta)
        if writer is a:
            seen_by_a[len(fresh.events)] = service.get_session_sync(
                app_name=APP, user_id="ann", session_id=a.id
            ).state
    row = SessionRow.objects.get(session_id=a.id)
    assert len(seen_by_a) > 5
    for seq, expected in seen_by_a.items():
        assert selectors.state_as_of(row, seq).merged() == expected, f"as of #{seq}"


def test_state_as_of_creation_excludes_later_changes_and_includes_earlier_ones(service):
    early = service.create_session_sync(app_name=APP, user_id="ann")
    append(service, early, {"app:before": 1, "user:before": 1})
    s = service.create_session_sync(app_name=APP, user_id="ann", state={"k": "v", "user:mine": 2})
    append(service, early, {"app:after": 1})
    state = selectors.state_as_of(SessionRow.objects.get(session_id=s.id), 0)
    assert state.merged() == {"k": "v", "user:mine": 2, "user:before": 1, "app:before": 1}


def test_key_history_spans_sessions_for_shared_scopes(service):
    s1 = service.create_session_sync(app_name=APP, user_id="ann", state={"user:lang": "en"})
    s2 = service.create_session_sync(app_name=APP, user_id="ann")
    other = service.create_session_sync(app_name=APP, user_id="bob")
    append(service, s2, {"user:lang": "fr", "app:v": 1, "local": 1})
    append(service, other, {"user:lang": "de", "app:v": 2, "local": 2})
    app = App.objects.get(name=APP)
    history = selectors.key_history(app=app, full_key="user:lang", user_id="ann")
    assert [(c.session.session_id, c.seq, c.new_value) for c in history] == [(s2.id, 1, "fr"), (s1.id, 0, "en")]
    assert [c.new_value for c in selectors.key_history(app=app, full_key="app:v")] == [2, 1]
    local = selectors.key_history(app=app, full_key="local", session=SessionRow.objects.get(session_id=other.id))
    assert [c.new_value for c in local] == [2]


def test_a_events_changes_and_a_new_sessions_come_app_then_user_then_session_each_in_change_order(service):
    s = service.create_session_sync(app_name=APP, user_id="ann", state={"z": 1, "user:b": 1, "app:c": 1, "a": 1})
    append(service, s, {"s2": 1, "user:u2": 1, "app:a2": 1, "s1": 1, "app:a1": 1, "user:u1": 1})
    row = SessionRow.objects.get(session_id=s.id)
    initial = selectors.initial_changes(row)
    assert [(c.scope, c.key) for c in initial] == [("app", "c"), ("user", "b"), ("session", "z"), ("session", "a")]
    (changes,) = selectors.changes_by_event([row.events.get(seq=1).pk]).values()
    assert [(c.scope, c.key) for c in changes] == [
        ("app", "a2"), ("app", "a1"), ("user", "u2"), ("user", "u1"), ("session", "s2"), ("session", "s1")]
    assert [c.id for c in changes if c.scope == "app"] == sorted(c.id for c in changes if c.scope == "app")


def test_the_timelines_changes_read_as_plain_columns_match_the_stored_rows(service):
    """`changes_by_event` reads columns in plain SQL, not model instances: each change keeps the
    row's values (JSON of every shape, a cleared key's None) and the model's kind and full key."""
    s = service.create_session_sync(app_name=APP, user_id="ann", state={"same": [1, {"a": None}], "gone": 1})
    append(service, s, {"same": [1, {"a": None}], "gone": None, "user:n": 1.5, "app:s": "text", "new": {"k": True}})
    row = SessionRow.objects.get(session_id=s.id)
    event_pk = row.events.get(seq=1).pk
    with CaptureQueriesContext(connection) as captured:
        (changes,) = selectors.changes_by_event([event_pk]).values()
    assert len(captured) == 1  # counted as Django's own statements are, for the query-count tests
    stored = {c.pk: c for c in StateChange.objects.filter(event_id=event_pk)}
    assert sorted(c.id for c in changes) == sorted(stored)
    for change in changes:
        model = stored[change.id]
        assert (change.scope, change.key, change.old_value, change.new_value, change.existed_before) == (
            model.scope, model.key, model.old_value, model.new_value, model.existed_before)
        assert (change.kind, change.full_key) == (model.kind, model.full_key)
    assert {c.full_key: c.kind for c in changes} == {
        "same": "rewrite", "gone": "cleared", "user:n": "added", "app:s": "added", "new": "added"}
    assert selectors.changes_by_event([]) == {}


def test_a_pages_events_read_in_plain_sql_equal_the_orms_rows(service):
    """The unfiltered page (`_page_sql.event_rows`) builds model instances itself: every field as
    the ORM converts it (JSON, booleans, NULLs), the same rows in the same order, before a seq too."""
    s = service.create_session_sync(app_name=APP, user_id="ann")
    call = types.Part(function_call=types.FunctionCall(id="c1", name="f", args={"n": [1, 2.5, None]}))
    response = types.Part(function_response=types.FunctionResponse(id="c1", name="f", response={"error": "no"}))
    for event in (
        Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text="é ✓")])),
        Event(author="agent", invocation_id="i1", content=types.Content(role="model", parts=[call])),
        Event(author="agent", invocation_id="i1", content=types.Content(role="user", parts=[response])),
        Event(author="agent", invocation_id="i1", error_code="BOOM", branch="a.b"),
        Event(author="agent", invocation_id="i2", actions=EventActions(rewind_before_invocation_id="i1")),
        Event(author="agent", invocation_id="i2", actions=EventActions(state_delta={"k": {"deep": True}})),
    ):
        service.append_event_sync(s, event)
    row = SessionRow.objects.get(session_id=s.id)
    names = [field.attname for field in EventRow._meta.concrete_fields]

    def fields(events):
        return [[(getattr(e, n), type(getattr(e, n))) for n in names] for e in events]

    for before, limit in ((None, 13), (None, 3), (5, 2)):
        plain = selectors.event_rows_before(row, before=before, filters=selectors.Filters(), limit=limit)
        orm = EventRow.objects.filter(session=row, **({"seq__lt": before} if before else {})).order_by("-seq")[:limit]
        assert plain and fields(plain) == fields(orm), (before, limit)
        assert all(not e._state.adding and e._state.db == "default" for e in plain)
    assert selectors.event_rows_before(row, before=1, filters=selectors.Filters(), limit=5) == []
    top = selectors.event_rows_before(row, before=None, filters=selectors.Filters(), limit=13)
    assert [(e.seq, e.has_function_call, e.has_function_response, e.has_error, e.error_code) for e in top[-4:]] == [
        (4, False, False, True, "BOOM"), (3, False, True, True, None), (2, True, False, False, None),
        (1, False, False, False, None)]


def test_the_session_a_page_shows_read_in_plain_sql_equals_the_orms_row(service):
    s = service.create_session_sync(app_name=APP, user_id="ann", state={"k": [1, {"n": None}], "user:u": 1})
    append(service, s, {"k": 2})
    orm = SessionRow.objects.select_related("app").get(session_id=s.id)
    plain = selectors.session_for_page(orm.pk)
    names = [field.attname for field in SessionRow._meta.concrete_fields]
    assert [(getattr(plain, n), type(getattr(plain, n))) for n in names] == [
        (getattr(orm, n), type(getattr(orm, n))) for n in names]
    assert (plain.app.pk, plain.app.name, plain.key) == (orm.app.pk, APP, orm.key)
    assert plain.app.created_at == orm.app.created_at  # the app's other columns load when read
    assert selectors.session_for_page(orm.pk + 1000) is None


def test_current_state_splits_scopes_and_is_empty_where_a_scope_has_no_row(service):
    s = service.create_session_sync(app_name=APP, user_id="ann", state={"k": {"n": [1, 2]}, "user:lang": "en"})
    row = SessionRow.objects.get(session_id=s.id)
    state = selectors.current_state(row)
    assert (state.app, state.user, state.session) == ({}, {"lang": "en"}, {"k": {"n": [1, 2]}})
    append(service, s, {"app:v": 2, "user:lang": None})
    state = selectors.current_state(SessionRow.objects.get(session_id=s.id))
    assert (state.app, state.user) == ({"v": 2}, {"lang": None})
    other = service.create_session_sync(app_name=APP, user_id="new")
    assert selectors.current_state(SessionRow.objects.get(session_id=other.id)).user == {}
