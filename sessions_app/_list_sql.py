"""The SQL of ADK's reads (`list_sessions`, `get_session`), for SQLite and PostgreSQL.

A whole app's list is the read ADK users find slowest at scale, and for a
short list (one user's) building the ORM's queries cost more than running
them; so, as `_append_sql` does for appends, two plain statements on the
driver's cursor: the app's and users' shared state, then the sessions'
columns. JSON comes back as text on both backends (Django loads `jsonb` as
text) and is parsed by pydantic's parser, a quarter of `json.loads`'s time.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from pydantic_core import from_json

from ._append_sql import Statements
from .models import App, AppState, Event, Session, UserState

_S, _A, _AS, _US = Session._meta.db_table, App._meta.db_table, AppState._meta.db_table, UserState._meta.db_table
_E = Event._meta.db_table

SessionColumns = tuple[str, str, float, int, dict[str, Any]]  # session id, user id, update time, revision, own state


class SessionPosition(NamedTuple):
    """Where a session stands in ADK's list order: a keyset page starts after it."""

    update_time: float
    user_id: str
    session_id: str


def _state(text: str | None) -> dict[str, Any]:
    return from_json(text) if text else {}


def shared_states(
    sql: Statements, *, app_name: str, user_id: str | None
) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]] | None:
    """The app's pk, its `app:` state and each user's `user:` state (only `user_id`'s when given); None: no such app."""
    user_match = " AND u.user_id = %s" if user_id is not None else ""
    sql.execute(
        f"SELECT a.id, ast.state, u.user_id, u.state FROM {_A} a"
        f" LEFT JOIN {_AS} ast ON ast.app_id = a.id"
        f" LEFT JOIN {_US} u ON u.app_id = a.id{user_match} WHERE a.name = %s",
        (user_id, app_name) if user_id is not None else (app_name,),
    )
    rows = sql.fetchall()
    if not rows:
        return None
    users = {user: _state(state) for _, _, user, state in rows if user is not None}
    return rows[0][0], _state(rows[0][1]), users


def shared_of(sql: Statements, *, app_pk: int, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The app's `app:` state and the user's `user:` state (keys without their prefix), in one statement."""
    sql.execute(
        f"SELECT (SELECT state FROM {_AS} WHERE app_id = %s),"
        f" (SELECT state FROM {_US} WHERE app_id = %s AND user_id = %s)",
        (app_pk, app_pk, user_id),
    )
    app_state, user_state = sql.fetchall()[0]
    return _state(app_state), _state(user_state)


def user_session_columns(
    sql: Statements, *, app_name: str, user_id: str, after: SessionPosition | None = None, limit: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any], list[SessionColumns]]:
    """One user's sessions as `session_columns` lists them, with the app's `app:` and the user's
    `user:` state. On PostgreSQL in one statement, a second being a second round trip to the
    server: the shared states ride on every row (read from the first) as subqueries the server
    runs once, and the sessions come straight off their index in ADK's order (a join to the
    app and scope tables instead sorted them and looked the user's state up per row: 0.53 ->
    0.12 ms at the server for 50 sessions). SQLite has no round trip, and there two
    statements take a tenth less than one (at 100 000 sessions, 0.37 -> 0.33 ms a list)."""
    if sql.sqlite:
        return _user_session_columns_apart(sql, app_name=app_name, user_id=user_id, after=after, limit=limit)
    where, params = ["s.app_id = (SELECT id FROM a)", "s.user_id = %s"], [user_id]
    page = _page(where, params, after, limit, table="s.")
    sql.execute(
        f"WITH a AS (SELECT id FROM {_A} WHERE name = %s)"
        f" SELECT s.session_id, s.update_time, s.revision, s.state,"
        f" (SELECT state FROM {_AS} WHERE app_id = (SELECT id FROM a)),"
        f" (SELECT state FROM {_US} WHERE app_id = (SELECT id FROM a) AND user_id = %s)"
        f" FROM {_S} s WHERE {' AND '.join(where)}{page}",
        [app_name, user_id, *params],
    )
    found = sql.fetchall()
    if not found:
        return {}, {}, []
    rows = [(sid, user_id, updated, revision, _state(state)) for sid, updated, revision, state, _, _ in found]
    return _state(found[0][4]), _state(found[0][5]), rows


def _user_session_columns_apart(
    sql: Statements, *, app_name: str, user_id: str, after: SessionPosition | None, limit: int | None,
) -> tuple[dict[str, Any], dict[str, Any], list[SessionColumns]]:
    shared = shared_states(sql, app_name=app_name, user_id=user_id)
    if shared is None:
        return {}, {}, []
    app_pk, app_state, user_states = shared
    rows = session_columns(sql, app_pk=app_pk, user_id=user_id, after=after, limit=limit)
    return app_state, user_states.get(user_id, {}), rows


def session_columns(
    sql: Statements, *, app_pk: int, user_id: str | None = None, after: SessionPosition | None = None,
    limit: int | None = None,
) -> list[SessionColumns]:
    """The app's sessions (only `user_id`'s when given), oldest update first, as ADK orders them:
    those after position `after` (keyset paging, no offset to scan past), `limit` at most."""
    where, params = ["app_id = %s"], [app_pk]
    if user_id is not None:
        where.append("user_id = %s")
        params.append(user_id)
    page = _page(where, params, after, limit)
    sql.execute(f"SELECT session_id, user_id, update_time, revision, state FROM {_S} WHERE {' AND '.join(where)}{page}",
                params)
    return [(sid, user, updated, revision, _state(state)) for sid, user, updated, revision, state in sql.fetchall()]


def _page(where: list[str], params: list[Any], after: SessionPosition | None, limit: int | None,
          table: str = "") -> str:
    """ADK's list order, and a keyset page of it: adds the condition for the rows past `after`
    to `where` (and its values to `params`), and returns the ORDER BY and LIMIT that follow."""
    t = table
    if after is not None:
        where.append(f"({t}update_time > %s OR ({t}update_time = %s AND ({t}user_id > %s"
                     f" OR ({t}user_id = %s AND {t}session_id > %s))))")
        params += [after.update_time, after.update_time, after.user_id, after.user_id, after.session_id]
    order = f" ORDER BY {t}update_time, {t}user_id, {t}session_id"
    if limit is None:
        return order
    params.append(limit)
    return order + " LIMIT %s"


def session_with_shared(
    sql: Statements, *, app_name: str, user_id: str, session_id: str
) -> tuple[int, SessionColumns, dict[str, Any], dict[str, Any]] | None:
    """One session's pk and columns, with its app's and user's state (exact id only)."""
    sql.execute(
        f"SELECT s.id, s.update_time, s.revision, s.state, ast.state, u.state FROM {_S} s"
        f" JOIN {_A} a ON a.id = s.app_id"
        f" LEFT JOIN {_AS} ast ON ast.app_id = s.app_id"
        f" LEFT JOIN {_US} u ON u.app_id = s.app_id AND u.user_id = s.user_id"
        " WHERE a.name = %s AND s.user_id = %s AND s.session_id = %s",
        (app_name, user_id, session_id),
    )
    rows = sql.fetchall()
    if not rows:
        return None
    pk, updated, revision, state, app_state, user_state = rows[0]
    return pk, (session_id, user_id, updated, revision, _state(state)), _state(app_state), _state(user_state)


def event_json(sql: Statements, *, session_pk: int, limit: int | None, after_timestamp: float | None) -> list[str]:
    """Stored event JSON text, newest first: `limit` at most, stamped at or after `after_timestamp`."""
    where, params = "session_id = %s", [session_pk]
    if after_timestamp:
        where += " AND timestamp >= %s"
        params.append(after_timestamp)
    tail = ""
    if limit is not None:
        tail = " LIMIT %s"
        params.append(limit)
    sql.execute(f"SELECT data FROM {_E} WHERE {where} ORDER BY seq DESC{tail}", params)
    return [data for (data,) in sql.fetchall()]
