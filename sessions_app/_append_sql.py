"""The SQL of `services.event_append`, for SQLite and PostgreSQL.

Plain statements on Django's own connection (so they run inside the caller's
`transaction.atomic()`), against the tables of `models.py`. Locking: on
PostgreSQL the session row, then the app row, then the user row are taken
`FOR UPDATE`, always in that order; on SQLite the transaction is `BEGIN
IMMEDIATE` (see settings), which serialises writers anyway. Reads that must
not miss a concurrent writer (the state mark, a stored event id) run only
once the locks that writer would need are held.

Speed (bench/session_bench.py): the statements go to the driver's own cursor,
under Django's error wrapping but without its per-statement wrappers (query
logging, SQLite's placeholder rewriting by regex), and on SQLite, where
`BEGIN IMMEDIATE` already holds every writer off, the session lookup also
reads the stored copy of the event id, the state mark and the shared scopes
the event writes: one statement instead of four.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import psycopg
from django.db.backends.utils import CursorWrapper

from . import health
from .models import SCOPE_APP, SCOPE_USER, App, AppState, Event, Session, StateChange, UserState

_S, _A, _E = Session._meta.db_table, App._meta.db_table, Event._meta.db_table
_C, _AS, _US = StateChange._meta.db_table, AppState._meta.db_table, UserState._meta.db_table

_SESSION_FIELDS = tuple(field for field in Session._meta.concrete_fields if not field.primary_key)
# Every column but the id, in the order the statements bind them; a test
# holds these to the models' fields, so a new field cannot be left out.
EVENT_COLUMNS = (
    "session_id", "seq", "event_id", "invocation_id", "author", "timestamp", "branch", "data",
    "has_function_call", "has_function_response", "is_final_response", "error_code", "rewind_before", "state_mark",
    "has_error",
)
CHANGE_COLUMNS = (
    "app_id", "user_id", "session_id", "event_id", "seq", "scope", "key", "old_value", "new_value",
    "existed_before", "timestamp",
)
# The session's health counters an append may add to (sessions_app.health);
# the recorder's own (repeated requests, time to first token) are not here.
HEALTH_COLUMNS = frozenset({*health.COUNTERS.values(), "tool_loop_count", "cost_usd"})


class Change(NamedTuple):
    scope: str
    key: str
    old: Any
    new: Any
    existed: bool


class SessionSlot(NamedTuple):
    """What `Statements.session_slot` reads for a new session."""

    app_pk: int
    exists: bool
    app_state: dict[str, Any]
    user_state: dict[str, Any]


@dataclass
class LockedSession:
    pk: int
    app_pk: int
    user_id: str
    revision: int
    update_time: float
    state: dict[str, Any]
    recent_calls: Any = None  # read only for an event that calls tools
    # Read with the session row on SQLite (see `Statements.lock_session`): for this event id.
    prefetched: str | None = None
    stored_seq: int | None = None
    mark: int | None = None
    scopes: dict[str, dict[str, Any]] | None = None


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _dumps(value: Any) -> str | None:
    # SQL NULL stands for a None value, as Django's JSONField(null=True) stores it.
    return None if value is None else json.dumps(value)


def _qmarks(sql: str) -> str:
    # Our statements hold no literal "%": each %s is a parameter.
    return sql.replace("%s", "?")


class Statements:
    def __init__(self, cursor: CursorWrapper) -> None:
        self.db = cursor.db
        self.sqlite = self.db.vendor == "sqlite"
        postgres = self.db.vendor == "postgresql"
        # The driver's cursor under Django's wrappers. On PostgreSQL a server-binding cursor of
        # the same connection instead of Django's client-binding one, which spells every value
        # into the SQL text in Python (an append's JSON too); and there psycopg prepares each
        # statement at its first run on the connection (`prepare_threshold`, ADKUI_PREPARED_STATEMENTS
        # in the settings), so the server plans our few hot statements once per connection instead
        # of on every call (one user's list: 0.49 -> 0.17 ms at the server).
        self.raw = psycopg.Cursor(cursor.db.connection) if postgres else cursor.cursor
        self.json = "%s::jsonb" if postgres else "%s"
        self.for_update = " FOR UPDATE" if postgres else ""

    def execute(self, sql: str, params: tuple | list) -> None:
        if self.db.queries_logged:  # DEBUG, or a test counting queries: seen as Django's own are
            self._logged(sql, params)
        with self.db.wrap_database_errors:
            if self.sqlite:  # sqlite3's own execute: Django's subclass rewrites %s by regex on every call
                sqlite3.Cursor.execute(self.raw, _qmarks(sql), params)
            else:
                self.raw.execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        if len(rows) == 1:  # psycopg's executemany opens a pipeline: for one row, more work than one statement
            self.execute(sql, rows[0])
            return
        if self.db.queries_logged:
            self._logged(sql, rows)
        with self.db.wrap_database_errors:
            if self.sqlite:
                sqlite3.Cursor.executemany(self.raw, _qmarks(sql), rows)
            else:
                self.raw.executemany(sql, rows)

    def _logged(self, sql: str, params: Any) -> None:
        # Django's debug cursor logs a statement's time too; a statement here is logged before it
        # runs, as one (0.000 s), so that `CaptureQueriesContext` and DEBUG's list count it.
        self.db.queries_log.append({"sql": f"{sql} -- {params!r}", "time": "0.000"})

    def fetchall(self) -> list[tuple]:
        with self.db.wrap_database_errors:
            return self.raw.fetchall()

    def _one(self, sql: str, params: tuple) -> tuple | None:
        self.execute(sql, params)
        with self.db.wrap_database_errors:
            return self.raw.fetchone()

    def session_slot(self, app_name: str, user_id: str, session_id: str) -> SessionSlot | None:
        """Where a new session goes: its app's pk, whether the app has this session id already, and
        the app's and user's state, their rows made (empty) where missing so appends only ever update
        them. None: no such app yet. On PostgreSQL one statement, one round trip where a read, two
        inserts and a read after the commit took four: the inserts ride along as data-modifying CTEs,
        and the states read beside them are those before them (a row made here is read as NULL,
        that is empty, as it is made)."""
        if self.sqlite:
            return self._session_slot_apart(app_name, user_id, session_id)
        row = self._one(
            f"WITH a AS (SELECT id FROM {_A} WHERE name = %s),"
            f" ia AS (INSERT INTO {_AS} (app_id, state, update_time) SELECT id, '{{}}'::jsonb, 0 FROM a"
            " ON CONFLICT DO NOTHING),"
            f" iu AS (INSERT INTO {_US} (app_id, user_id, state, update_time) SELECT id, %s, '{{}}'::jsonb, 0 FROM a"
            " ON CONFLICT DO NOTHING)"
            f" SELECT a.id, EXISTS (SELECT 1 FROM {_S} WHERE app_id = a.id AND user_id = %s AND session_id = %s),"
            f" (SELECT state FROM {_AS} WHERE app_id = a.id),"
            f" (SELECT state FROM {_US} WHERE app_id = a.id AND user_id = %s) FROM a",
            (app_name, user_id, user_id, session_id, user_id),
        )
        return None if row is None else SessionSlot(row[0], bool(row[1]), _loads(row[2]) or {}, _loads(row[3]) or {})

    def _session_slot_apart(self, app_name: str, user_id: str, session_id: str) -> SessionSlot | None:
        row = self._one(
            f"SELECT a.id, EXISTS (SELECT 1 FROM {_S} WHERE app_id = a.id AND user_id = %s AND session_id = %s),"
            f" ast.state, u.state FROM {_A} a LEFT JOIN {_AS} ast ON ast.app_id = a.id"
            f" LEFT JOIN {_US} u ON u.app_id = a.id AND u.user_id = %s WHERE a.name = %s",
            (user_id, session_id, user_id, app_name),
        )
        if row is None:
            return None
        app_pk, exists, app_state, user_state = row
        for scope, state in ((SCOPE_APP, app_state), (SCOPE_USER, user_state)):
            if state is None:  # no row: no writer can make it meanwhile (BEGIN IMMEDIATE)
                self._make_scope_row(scope, app_pk, user_id)
        return SessionSlot(app_pk, bool(exists), _loads(app_state) or {}, _loads(user_state) or {})

    def insert_session(self, session: Session) -> None:
        """A new session's row, as `session.save()` writes it (every column, its field's own
        conversion), without the ORM's compiler: a fifth of a create's CPU on PostgreSQL. Sets its pk."""
        fields = _SESSION_FIELDS
        values = [field.get_db_prep_save(field.pre_save(session, True), self.db) for field in fields]
        sql = (f"INSERT INTO {_S} ({', '.join(field.column for field in fields)})"
               f" VALUES ({', '.join(['%s'] * len(fields))})")
        if self.sqlite:
            self.execute(sql, values)
            session.pk = self.raw.lastrowid
        else:
            session.pk = self._one(sql + " RETURNING id", values)[0]
        session._state.adding, session._state.db = False, self.db.alias

    def lock_session(
        self, app_name: str, user_id: str, session_id: str, *, calls: bool = False,
        event_id: str | None = None, scopes: Iterable[str] = (),
    ) -> LockedSession | None:
        """The session row, locked; with its recent tool calls when `calls` (an event that calls tools).

        On SQLite, given the `event_id` about to be stored, the same statement
        also reads what `event_seq`, `newest_change_id` and `lock_scope` (for
        `scopes`) would: no other writer can commit between them there.
        """
        columns = ["s.id", "s.app_id", "s.revision", "s.update_time", "s.state"]
        params: list[Any] = []
        if calls:
            columns.append("s.recent_calls")
        prefetch = self.sqlite and event_id is not None
        scopes = tuple(scopes) if prefetch else ()
        if prefetch:
            columns += [f"(SELECT seq FROM {_E} WHERE session_id = s.id AND event_id = %s)", f"(SELECT MAX(id) FROM {_C})"]
            params.append(event_id)
            for scope in scopes:
                if scope == SCOPE_APP:
                    columns.append(f"(SELECT state FROM {_AS} WHERE app_id = s.app_id)")
                else:
                    columns.append(f"(SELECT state FROM {_US} WHERE app_id = s.app_id AND user_id = s.user_id)")
        row = self._one(
            f"SELECT {', '.join(columns)}"
            f" FROM {_S} s JOIN {_A} a ON a.id = s.app_id WHERE a.name = %s AND s.user_id = %s AND s.session_id = %s"
            + (" FOR UPDATE OF s" if self.for_update else ""),
            (*params, app_name, user_id, session_id),
        )
        if row is None:
            return None
        locked = LockedSession(row[0], row[1], user_id, row[2], row[3], _loads(row[4]) or {})
        rest = iter(row[5:])
        if calls:
            locked.recent_calls = _loads(next(rest))
        if prefetch:
            locked.prefetched, locked.stored_seq, locked.mark = event_id, next(rest), next(rest) or 0
            # A scope row not there yet (NULL) is left to `lock_scope`, which creates it.
            locked.scopes = {scope: _loads(state) for scope, state in zip(scopes, rest) if state is not None}
        return locked

    def newest_change_id(self, locked: LockedSession | None = None) -> int:
        """The newest change id; read with the session row on SQLite, so only before this transaction writes one."""
        if locked is not None and locked.mark is not None:
            mark, locked.mark = locked.mark, None
            return mark
        return self._one(f"SELECT MAX(id) FROM {_C}", ())[0] or 0

    def event_seq(self, locked: LockedSession, event_id: str) -> int | None:
        if locked.prefetched is not None and locked.prefetched == event_id:
            return locked.stored_seq
        row = self._one(f"SELECT seq FROM {_E} WHERE session_id = %s AND event_id = %s", (locked.pk, event_id))
        return row[0] if row else None

    def newest_event_id(self, session_pk: int) -> str | None:
        row = self._one(f"SELECT event_id FROM {_E} WHERE session_id = %s ORDER BY seq DESC LIMIT 1", (session_pk,))
        return row[0] if row else None

    def _scope_where(self, scope: str, locked: LockedSession) -> tuple[str, str, tuple]:
        if scope == SCOPE_APP:
            return _AS, "app_id = %s", (locked.app_pk,)
        return _US, "app_id = %s AND user_id = %s", (locked.app_pk, locked.user_id)

    def lock_scope(self, scope: str, locked: LockedSession) -> dict[str, Any]:
        if locked.scopes and scope in locked.scopes:
            return locked.scopes.pop(scope) or {}
        table, where, params = self._scope_where(scope, locked)
        select = f"SELECT state FROM {table} WHERE {where}{self.for_update}"
        row = self._one(select, params)
        if row is None:  # created lazily for sessions made before the row existed
            self._make_scope_row(scope, locked.app_pk, locked.user_id)
            row = self._one(select, params)
        return _loads(row[0]) or {}

    def _make_scope_row(self, scope: str, app_pk: int, user_id: str) -> None:
        """The app's (or user's) state row, empty, unless it is there already."""
        table, columns, values = (_AS, "app_id", (app_pk,)) if scope == SCOPE_APP else (
            _US, "app_id, user_id", (app_pk, user_id))
        marks = ", ".join(["%s"] * len(values))
        self.execute(f"INSERT INTO {table} ({columns}, state, update_time) VALUES ({marks}, {self.json}, 0)"
                     " ON CONFLICT DO NOTHING", (*values, "{}"))

    def save_scope(self, scope: str, locked: LockedSession, state: dict[str, Any], now: float) -> None:
        table, where, params = self._scope_where(scope, locked)
        self.execute(
            f"UPDATE {table} SET state = {self.json}, update_time = %s WHERE {where}", (json.dumps(state), now, *params)
        )

    def insert_event(self, e: Event, data_json: str) -> int:
        values = {column: getattr(e, column) for column in EVENT_COLUMNS} | {"data": data_json}
        marks = ", ".join(self.json if column == "data" else "%s" for column in EVENT_COLUMNS)
        return self._one(
            f"INSERT INTO {_E} ({', '.join(EVENT_COLUMNS)}) VALUES ({marks}) RETURNING id",
            tuple(values[column] for column in EVENT_COLUMNS),
        )[0]

    def insert_changes(
        self, locked: LockedSession, changes: list[Change], *, event_pk: int | None, seq: int, timestamp: float
    ) -> None:
        """Change rows of one event (`seq` 0 and no event: a session's initial state)."""
        if not changes:
            return
        marks = ", ".join(self.json if column in ("old_value", "new_value") else "%s" for column in CHANGE_COLUMNS)
        self.executemany(
            f"INSERT INTO {_C} ({', '.join(CHANGE_COLUMNS)}) VALUES ({marks})",
            [
                (locked.app_pk, locked.user_id, locked.pk, event_pk, seq, c.scope, c.key, _dumps(c.old), _dumps(c.new),
                 c.existed, timestamp)
                for c in changes
            ],
        )

    def bump_session(
        self, pk: int, revision: int, now: float, state: dict[str, Any] | None,
        increments: Mapping[str, float] | None = None, recent_calls: list[Any] | None = None,
    ) -> None:
        """Set the revision (and session state, recent calls), adding `increments` to health counters, in one UPDATE."""
        sets, params = ["revision = %s", "update_time = %s"], [revision, now]
        if state is not None:
            sets.append(f"state = {self.json}")
            params.append(json.dumps(state))
        if recent_calls is not None:
            sets.append(f"recent_calls = {self.json}")
            params.append(json.dumps(recent_calls))
        for column, amount in (increments or {}).items():
            if column not in HEALTH_COLUMNS:  # a name we splice into SQL: only ours
                raise ValueError(f"not a health column: {column!r}")
            sets.append(f"{column} = COALESCE({column}, 0) + %s")
            params.append(amount)
        self.execute(f"UPDATE {_S} SET {', '.join(sets)} WHERE id = %s", (*params, pk))
