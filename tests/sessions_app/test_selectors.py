"""Time travel, diffs and key histories, read from the stored change rows."""
from __future__ import annotations

import random

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions

from sessions_app import selectors
from sessions_app.models import App
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
