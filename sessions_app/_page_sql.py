"""The session page's small reads, in plain SQL on the driver's cursor (as `_list_sql`).

Every session page runs each of these once: through the ORM, building and compiling a
query cost more than the database's answer (some 0.3 ms of CPU each, against 0.05), and
the state changes of its first events (60 or so) as model instances 0.9 ms, as columns 0.2.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from pydantic_core import from_json

import plain_sql

from ._append_sql import Statements
from .models import App, Event, Session, StateChange

_S, _E, _C, _A = Session._meta.db_table, Event._meta.db_table, StateChange._meta.db_table, App._meta.db_table

_EVENT_COLUMNS, _SESSION_COLUMNS = plain_sql.columns(Event), plain_sql.columns(Session, "s")
# The biggest value of a big integer column (ids, sequence numbers). A number from an address
# beyond it matches no row and bounds no range, as the ORM's lookups take it: the drivers
# refuse to bind it.
_BIGGEST = 2**63 - 1

ChangeColumns = tuple[int, int | None, str, str, Any, Any, bool]  # id, event pk, scope, key, old, new, existed before


class Fork(NamedTuple):
    pk: int
    session_id: str
    forked_at_seq: int | None


class LastRunEvent(NamedTuple):
    invocation_id: str
    author: str
    is_final_response: bool
    error_code: str | None


def _value(text: str | None) -> Any:
    return from_json(text) if text is not None else None


def session_row(sql: Statements, *, pk: int) -> Session | None:
    """The session of this pk, with its app (pk and name; its other columns load if read)."""
    if not 0 < pk <= _BIGGEST:
        return None
    sql.execute(f"SELECT {_SESSION_COLUMNS}, a.name FROM {_S} s JOIN {_A} a ON a.id = s.app_id WHERE s.id = %s", [pk])
    rows = sql.fetchall()
    if not rows:
        return None
    *columns, app_name = rows[0]
    session = plain_sql.instance(Session, sql.db.alias, columns)
    session.app = App.from_db(sql.db.alias, ["id", "name"], [session.app_id, app_name])
    return session


def event_rows(sql: Statements, *, session_pk: int, before: int | None, limit: int) -> list[Event]:
    """Up to `limit` events of the session before seq `before` (all when None), newest first."""
    if before is not None and before <= 0:
        return []  # no event before #0
    where, params = "session_id = %s", [session_pk]
    if before is not None and before <= _BIGGEST:
        where += " AND seq < %s"
        params.append(before)
    sql.execute(f"SELECT {_EVENT_COLUMNS} FROM {_E} WHERE {where} ORDER BY seq DESC LIMIT %s", [*params, limit])
    return [plain_sql.instance(Event, sql.db.alias, row) for row in sql.fetchall()]


def change_columns(sql: Statements, *, event_pks: list[int] | None = None, initial_of: int | None = None) -> list[ChangeColumns]:
    """State changes of these events, or a session's initial state (of `initial_of`'s pk)."""
    if event_pks is not None:
        if not event_pks:
            return []
        where, params = f"event_id IN ({', '.join(['%s'] * len(event_pks))})", list(event_pks)
    else:
        where, params = "session_id = %s AND seq = 0", [initial_of]
    sql.execute(f'SELECT id, event_id, scope, "key", old_value, new_value, existed_before FROM {_C} WHERE {where}', params)
    return [(pk, event, scope, key, _value(old), _value(new), bool(existed))
            for pk, event, scope, key, old, new, existed in sql.fetchall()]


def rewinds(sql: Statements, *, session_pk: int) -> list[tuple[int, str]]:
    """(seq, target invocation) of the session's rewind events."""
    sql.execute(f"SELECT seq, rewind_before FROM {_E} WHERE session_id = %s AND rewind_before IS NOT NULL", [session_pk])
    return sql.fetchall()


def last_run_event(sql: Statements, *, session_pk: int, state_update_prefix: str) -> LastRunEvent | None:
    """The newest event but the "user" events of state updates (their invocation ids start
    with the prefix, which holds no LIKE wildcard)."""
    sql.execute(
        f"SELECT invocation_id, author, is_final_response, error_code FROM {_E}"
        " WHERE session_id = %s AND NOT (author = 'user' AND invocation_id LIKE %s) ORDER BY seq DESC LIMIT 1",
        [session_pk, state_update_prefix + "%"],
    )
    rows = sql.fetchall()
    return LastRunEvent(rows[0][0], rows[0][1], bool(rows[0][2]), rows[0][3]) if rows else None


def forks(sql: Statements, *, session_pk: int) -> list[Fork]:
    """Sessions forked from this one, oldest first."""
    sql.execute(f"SELECT id, session_id, forked_at_seq FROM {_S} WHERE forked_from_id = %s ORDER BY id", [session_pk])
    return [Fork(*row) for row in sql.fetchall()]
