"""State as of an event, with writers of one app and one user in many sessions at once.

Every event of every writer writes `app:` and `user:` keys, so each waits for
the app and user rows the others hold. State as of an event must show what
that event wrote and, for the shared scopes, the state right after it in
commit order: the change rows replayed in id order (ids are taken while the
scope row is locked, so they follow the commit order of that scope).
"""
from __future__ import annotations

import multiprocessing
from typing import Any

import pytest
from django.conf import settings
from google.adk.events.event import Event as AdkEvent

from sessions_app import selectors
from sessions_app.models import SCOPE_APP, SCOPE_USER, App, Event, StateChange
from tests.workers import database_url_for_children, scoped_writer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="PostgreSQL only: SQLite's BEGIN IMMEDIATE runs one writer at a time, so there is no race to lose",
    ),
]

APP, USER = "as_of_race_app", "shared_user"
WRITERS, APPENDS = 8, 30


def _run_writers(service: Any) -> None:
    for n in range(WRITERS):
        service.create_session_sync(app_name=APP, user_id=USER, session_id=f"w{n}")
    ctx = multiprocessing.get_context("spawn")
    url = database_url_for_children()
    procs = [ctx.Process(target=scoped_writer, args=(url, APP, USER, n, f"w{n}", APPENDS)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0


def _replayed(app: App, scope: str) -> dict[int, dict[str, Any]]:
    """Each event's pk -> the scope's state right after its changes, replayed in change-id order."""
    state: dict[str, Any] = {}
    after: dict[int, dict[str, Any]] = {}
    changes = StateChange.objects.filter(app=app, scope=scope, user_id=USER).order_by("id")
    for event_pk, key, new in changes.values_list("event_id", "key", "new_value"):
        state[key] = new
        after[event_pk] = dict(state)
    return after


def test_state_as_of_every_event_shows_what_it_wrote_and_the_shared_state_right_after_it(service):
    _run_writers(service)
    app = App.objects.get(name=APP)
    app_after, user_after = _replayed(app, SCOPE_APP), _replayed(app, SCOPE_USER)
    rows = list(Event.objects.filter(session__app=app).select_related("session").order_by("pk"))
    assert len(rows) == WRITERS * APPENDS

    missed_own, wrong_shared = [], []
    for row in rows:
        state = selectors.state_as_of(row.session, row.seq)
        wrote = AdkEvent.model_validate(row.data).actions.state_delta
        merged = state.merged()
        if {k: merged.get(k) for k in wrote} != wrote:
            missed_own.append(row.pk)
        if state.app != app_after[row.pk] or state.user != user_after[row.pk]:
            wrong_shared.append(row.pk)
    assert not missed_own, f"{len(missed_own)} of {len(rows)} events: state as of the event lacks its own values"
    assert not wrong_shared, f"{len(wrong_shared)} of {len(rows)} events: shared state as of the event is not the replay"
