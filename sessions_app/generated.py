"""Generated sessions for trying the UI, and benchmarking it, at scale (`manage.py fill_scale`, bench/scale_bench.py).

`fill` writes every session through the write path (`services.session_create`,
`services.event_append`), many to a transaction: the rows are those any
create and append write, only the commits are fewer. `bulk_fill` writes the
same rows many sessions to a statement (COPY on PostgreSQL), for stores of
millions of events.
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models, transaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from access import limits

from . import health, services
from ._append_sql import CHANGE_COLUMNS, EVENT_COLUMNS
from .keys import SessionKey
from .models import SCOPE_APP, SCOPE_USER, App, AppState, Session, StateChange, UserState
from .models import Event as EventRow
from .scopes import ScopedDelta, json_safe_state, split_delta

BASE_TIME = 1.7e9  # event times: sessions ten seconds apart from here, in generation order


@dataclass(frozen=True)
class GeneratedApp:
    """`sessions` sessions of app `app` over `users` users, `events` events each: every
    event with a state delta in every scope, and one session in twenty ending in an error."""

    app: str
    sessions: int
    users: int
    events: int

    def user(self, s: int) -> str:
        return f"user-{s % self.users:05d}"

    def session_id(self, s: int) -> str:
        return f"s-{s:07d}"

    def initial_state(self, s: int) -> dict[str, Any]:
        return {"topic": f"topic {s % 13}", "user:lang": ["en", "fr", "de"][s % 3], "app:build": 1}

    def event(self, s: int, i: int) -> Event:
        user_turn = i % 2 == 0
        error = s % 20 == 7 and i == self.events - 1
        text = f"{'question' if user_turn else 'answer'} {i} of session {s}: " + "lorem ipsum dolor " * 6
        return Event(
            id=f"e-{s}-{i}", invocation_id=f"inv-{s}-{i // 2}", author="user" if user_turn else "helper",
            timestamp=BASE_TIME + s * 10 + i * 0.01,
            content=types.Content(role="user" if user_turn else "model", parts=[types.Part(text=text)]),
            error_code="MALFORMED_FUNCTION_CALL" if error else None,
            actions=EventActions(state_delta={
                "step": i, "last": text[:20], f"note_{i % 4}": {"n": i, "tags": ["a", "b"]},
                "user:turns": s * 100 + i, "app:appends": s * 100 + i,
            }),
        )


def fill(generated: GeneratedApp, indexes: range, *, batch: int = 200) -> None:
    """Write sessions number `indexes` of `generated`, `batch` to a transaction."""
    for start in range(indexes.start, indexes.stop, batch):
        with transaction.atomic():
            for s in range(start, min(start + batch, indexes.stop)):
                key = SessionKey(generated.app, generated.user(s), generated.session_id(s))
                services.session_create(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id,
                                        state=generated.initial_state(s))
                for i in range(generated.events):
                    services.event_append(key=key, event=generated.event(s, i), push=False)


# ---- the bulk builder -----------------------------------------------------------
#
# The rows of `fill`, written many sessions to a statement: sessions (with their
# health columns), events, state change rows, the app's and users' state rows.
# Every value comes from the functions the write path itself uses
# (`json_safe_state`, `split_delta`, `limits.dumps`, `services.event_columns`,
# `health`); only the ids are handed out here, in the order the write path's
# inserts take them, so each state mark (the newest change id before a write)
# is the one an append reads. tests/sessions_app/test_generated_bulk.py holds the
# two stores equal. Not written: relay notices (broadcasts of a fill nobody
# watches, pruned after a minute). No other writer may run meanwhile: the tables
# are locked on PostgreSQL; SQLite's IMMEDIATE transaction holds writers off.

EVENT_ROW = ("id", *EVENT_COLUMNS)
CHANGE_ROW = ("id", *CHANGE_COLUMNS)
JSON_COLUMNS = {"data", "old_value", "new_value"}


@dataclass
class _Ids:
    """The next id of each table, as its autoincrement would hand it out, and the
    newest change id stored (the state mark a write reads: `MAX(id)`, not the counter)."""

    session: int
    event: int
    change: int
    newest_change: int


@dataclass
class _Scopes:
    """The app's and users' state as the writes so far left it, and when each was last written."""

    app: dict[str, Any]
    app_time: float
    users: dict[str, list[Any]] = field(default_factory=dict)  # user -> [state, update time]


@dataclass
class _Rows:
    sessions: list[Session] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    changes: list[tuple] = field(default_factory=list)


def bulk_fill(generated: GeneratedApp, indexes: range, *, batch: int = 500, defer_indexes: bool = False) -> None:
    """Write sessions number `indexes` of `generated` as `fill` does, `batch` sessions to a transaction.

    `defer_indexes` (PostgreSQL; for millions of events): the event and change
    tables' indexes, but their unique ones, are dropped first and built again
    once all rows are in, all in one transaction, so a fill that fails leaves
    them as they were. Building an index once costs far less than keeping it
    up to date row by row (the search index runs a function for every event).
    """
    if defer_indexes and connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            definitions = _drop_indexes(cursor)
            _bulk_fill(generated, indexes, batch)
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # their checks now: an index waits for none pending
            cursor.execute("SET LOCAL maintenance_work_mem = '512MB'")
            for definition in definitions:
                cursor.execute(definition)
    else:
        _bulk_fill(generated, indexes, batch)
    _after_bulk_load()


def _drop_indexes(cursor: Any) -> list[str]:
    """Drop the non-unique indexes of the event and change tables; return the statements that make them again."""
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN (%s, %s)"
        " AND indexdef NOT LIKE 'CREATE UNIQUE INDEX%%'", [EventRow._meta.db_table, StateChange._meta.db_table])
    found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f'DROP INDEX "{name}"')
    return [definition for _, definition in found]


def _bulk_fill(generated: GeneratedApp, indexes: range, batch: int) -> None:
    app = services.app_get_or_create(name=generated.app)
    for start in range(indexes.start, indexes.stop, batch):
        chunk = range(start, min(start + batch, indexes.stop))
        with transaction.atomic(), connection.cursor() as cursor:
            _lock_tables(cursor)
            ids = _Ids(*(_next_id(cursor, model) for model in (Session, EventRow, StateChange)),
                       _max_id(cursor, StateChange))
            scopes = _read_scopes(app, {generated.user(s) for s in chunk})
            rows = _Rows()
            for s in chunk:
                _session_rows(generated, s, app, ids, scopes, rows)
            _write(cursor, app, scopes, rows, ids)


def _after_bulk_load() -> None:
    """What a database wants after any bulk load. Planner statistics: SQLite keeps none until
    asked, and without them it counts "needs attention" through the errors index rather than the
    partial one made for it. On PostgreSQL a VACUUM besides (it cannot run inside a transaction, so
    not within one, as in a test's): it marks the new rows' pages all-visible, so counts answer
    from an index alone rather than read every row too; until autovacuum came round (never, on a
    server with it off), the home page's count of each app's sessions read the whole session table
    once per app: at 100 000 sessions 233 -> 57 ms."""
    tables = [model._meta.db_table for model in (Session, EventRow, StateChange, UserState)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            cursor.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")
            return
        for table in tables:
            cursor.execute(f"ANALYZE {table}")


def _lock_tables(cursor: Any) -> None:
    if connection.vendor == "postgresql":  # the ids are handed out here: no other writer meanwhile
        tables = ", ".join(m._meta.db_table for m in (Session, EventRow, StateChange, AppState, UserState))
        cursor.execute(f"LOCK TABLE {tables} IN SHARE ROW EXCLUSIVE MODE")


def _max_id(cursor: Any, model: type[models.Model]) -> int:
    cursor.execute(f"SELECT MAX(id) FROM {model._meta.db_table}")
    return cursor.fetchone()[0] or 0


def _next_id(cursor: Any, model: type[models.Model]) -> int:
    """The id the table's next insert gets: past every id it ever gave, deleted rows' too."""
    table = model._meta.db_table
    if connection.vendor == "postgresql":
        cursor.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id'))", [table])
    else:
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
    given = cursor.fetchone()
    return max(given[0] or 0 if given else 0, _max_id(cursor, model)) + 1


def _read_scopes(app: App, users: set[str]) -> _Scopes:
    stored = AppState.objects.filter(app=app).values_list("state", "update_time").first() or ({}, 0.0)
    scopes = _Scopes(dict(stored[0]), stored[1], {u: [{}, 0.0] for u in users})
    for user_id, state, update_time in UserState.objects.filter(app=app, user_id__in=users).values_list(
            "user_id", "state", "update_time"):
        scopes.users[user_id] = [dict(state), update_time]
    return scopes


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value)  # as `_append_sql` stores a change's values


def _apply(delta: ScopedDelta, state: dict[str, Any], head: tuple, scopes: _Scopes, now: float,
           ids: _Ids) -> tuple[int, list[tuple]]:
    """`services._apply_delta` on the scopes held here: the state mark and the change rows.
    `head` is (app, user, session, event, seq) of the rows; `state` is the session's."""
    mark, changes = ids.newest_change, []
    user = scopes.users[head[1]]
    for scope, values in delta.items():
        target = scopes.app if scope == SCOPE_APP else user[0] if scope == SCOPE_USER else state
        for key, new in values.items():
            changes.append((ids.change, *head, scope, key, _dumps(target.get(key)), _dumps(new), key in target, now))
            ids.newest_change = ids.change
            ids.change += 1
            target[key] = new
        if values and scope == SCOPE_APP:
            scopes.app_time = now
        elif values and scope == SCOPE_USER:
            user[1] = now
    return mark, changes


def _session_rows(generated: GeneratedApp, s: int, app: App, ids: _Ids, scopes: _Scopes, rows: _Rows) -> None:
    """The rows `session_create` and the session's appends write, in their order."""
    user_id, now = generated.user(s), time.time()
    session = Session(pk=ids.session, app=app, user_id=user_id, session_id=generated.session_id(s),
                      create_time=now, update_time=now)
    ids.session += 1
    state: dict[str, Any] = {}
    initial = split_delta(json_safe_state(generated.initial_state(s)))
    session.state_mark, changes = _apply(initial, state, (app.pk, user_id, session.pk, None, 0), scopes, now, ids)
    rows.changes += changes
    signals = health.SessionSignals()
    for i in range(generated.events):
        event = generated.event(s, i)
        event.actions.state_delta = json_safe_state(event.actions.state_delta or {})
        contribution = health.event_contribution(event)
        pk, seq = ids.event, i + 1
        ids.event += 1
        mark, changes = _apply(split_delta(event.actions.state_delta), state, (app.pk, user_id, session.pk, pk, seq),
                               scopes, event.timestamp, ids)
        columns = services.event_columns(event) | {
            "session_id": session.pk, "seq": seq, "state_mark": mark, "has_error": bool(contribution.errors),
            "data": limits.dumps(event.model_dump(mode="json", exclude_none=True), "event")}
        rows.events.append((pk, *(columns[c] for c in EVENT_COLUMNS)))
        rows.changes += changes
        signals.add(seq, event.invocation_id or "", contribution)
        session.revision, session.update_time = seq, event.timestamp
    session.state = state
    for column, value in signals.columns().items():
        setattr(session, column, value)
    rows.sessions.append(session)


def _write(cursor: Any, app: App, scopes: _Scopes, rows: _Rows, ids: _Ids) -> None:
    Session.objects.bulk_create(rows.sessions, batch_size=1000)
    _insert(cursor, EventRow._meta.db_table, EVENT_ROW, rows.events)
    _insert(cursor, StateChange._meta.db_table, CHANGE_ROW, rows.changes)
    AppState.objects.update_or_create(app=app, defaults={"state": scopes.app, "update_time": scopes.app_time})
    existing = set(UserState.objects.filter(app=app, user_id__in=scopes.users).values_list("user_id", flat=True))
    UserState.objects.bulk_create([UserState(app=app, user_id=u, state=st, update_time=t)
                                   for u, (st, t) in scopes.users.items() if u not in existing])
    UserState.objects.bulk_update([UserState(pk=pk, state=scopes.users[u][0], update_time=scopes.users[u][1])
                                   for pk, u in UserState.objects.filter(app=app, user_id__in=existing)
                                   .values_list("pk", "user_id")], ["state", "update_time"], batch_size=500)
    if connection.vendor == "postgresql":  # explicit ids leave the identity counters behind: set them on
        for model, last in ((Session, ids.session - 1), (EventRow, ids.event - 1), (StateChange, ids.change - 1)):
            if last > 0:
                cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [model._meta.db_table, last])


def _insert(cursor: Any, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Rows in `columns` order: COPY on PostgreSQL, one executemany on SQLite."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    marks = ", ".join("?" for _ in columns)
    with connection.wrap_database_errors:  # sqlite3's own executemany: Django's rewrites each statement by regex
        sqlite3.Cursor.executemany(cursor.cursor, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
