"""The bulk builder (`generated.bulk_fill`) writes exactly the rows the write path writes (#27).

The same generated sessions go through the write path (`generated.fill`:
`session_create`, `event_append`) into one app and through the bulk builder
into another; every column of every row they leave is compared, keyed by what
names a row rather than its id: ids become the session and sequence number
they point at, and a state mark becomes how many of the app's change rows lie
at or before it. Left out are only the wall-clock times a create stamps
(`create_time`, its change rows' `timestamp`).
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any

import pytest
from django.db import connection

from sessions_app.generated import GeneratedApp, bulk_fill, fill
from sessions_app.models import App, AppState, Event, Session, StateChange, UserState

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS, USERS, EVENTS = 23, 4, 6  # session 7 ends in an error; several batches of the builder


def store(app_name: str) -> dict[str, Any]:
    app = App.objects.get(name=app_name)
    change_ids = list(StateChange.objects.filter(app=app).order_by("id").values_list("id", flat=True))
    sessions = {row.pop("id"): row for row in Session.objects.filter(app=app).values()}
    names = {pk: (row["user_id"], row["session_id"]) for pk, row in sessions.items()}
    events = {row.pop("id"): row for row in Event.objects.filter(session__app=app).values()}
    event_names = {pk: (names[row["session_id"]], row["seq"]) for pk, row in events.items()}
    for row in sessions.values():
        del row["app_id"], row["create_time"]
        row["state_mark"] = bisect_right(change_ids, row["state_mark"])
    for row in events.values():
        row["session_id"] = names[row["session_id"]]
        row["state_mark"] = bisect_right(change_ids, row["state_mark"])
    changes = []
    for row in StateChange.objects.filter(app=app).order_by("id").values():
        del row["id"], row["app_id"]
        row["session_id"] = names[row["session_id"]]
        row["event_id"] = event_names.get(row["event_id"])
        if row["seq"] == 0:
            del row["timestamp"]  # a create's own clock
        changes.append(row)
    return {
        "sessions": sorted((names[pk], row) for pk, row in sessions.items()),
        "events": sorted(((row["session_id"], row["seq"]), row) for row in events.values()),
        "changes": changes,
        "app state": list(AppState.objects.filter(app=app).values_list("state", "update_time")),
        "user states": sorted(UserState.objects.filter(app=app).values_list("user_id", "state", "update_time")),
    }


def index_names() -> set[str]:
    with connection.cursor() as cursor:
        tables = {Event._meta.db_table, StateChange._meta.db_table}
        return {i for t in tables for i in connection.introspection.get_constraints(cursor, t)}


@pytest.mark.parametrize("defer_indexes", [False, True])
def test_the_bulk_builder_writes_the_rows_the_write_path_writes(defer_indexes):
    indexes = index_names()
    fill(GeneratedApp("via_path", SESSIONS, USERS, EVENTS), range(SESSIONS))
    bulk = GeneratedApp("via_bulk", SESSIONS, USERS, EVENTS)
    bulk_fill(bulk, range(10), batch=4, defer_indexes=defer_indexes)  # and on from there, as a second run adds
    bulk_fill(bulk, range(10, SESSIONS), batch=5, defer_indexes=defer_indexes)
    assert index_names() == indexes
    via_path, via_bulk = store("via_path"), store("via_bulk")
    assert len(via_path["events"]) == SESSIONS * EVENTS and len(via_path["changes"]) > SESSIONS * EVENTS * 4
    assert any(row["error_count"] for _, row in via_path["sessions"])
    for table in via_path:
        assert via_bulk[table] == via_path[table], table


def test_the_ids_go_on_from_the_bulk_builders():
    bulk_fill(GeneratedApp("via_bulk", 3, 2, 2), range(3))
    fill(GeneratedApp("after", 1, 1, 1), range(1))  # the write path's own inserts take the next ids
    bulk_sessions = Session.objects.filter(app__name="via_bulk").values_list("pk", flat=True)
    bulk_events = Event.objects.filter(session__app__name="via_bulk").values_list("pk", flat=True)
    assert Session.objects.get(app__name="after").pk == max(bulk_sessions) + 1
    assert Event.objects.get(session__app__name="after").pk == max(bulk_events) + 1


def _statistics_kept(table: str) -> bool:
    """The planner has statistics of `table`, and on PostgreSQL its pages are marked all-visible
    (a flush between tests truncates the tables, which starts them unmarked)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT relallvisible > 0 FROM pg_class WHERE relname = %s", [table])
            return bool(cursor.fetchone()[0])
        if "sqlite_stat1" not in connection.introspection.table_names(cursor):
            return False
        cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = %s", [table])
        return cursor.fetchone()[0] > 0


def _forget_statistics() -> None:
    """SQLite keeps an earlier test's statistics through the flush between tests."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite" and "sqlite_stat1" in connection.introspection.table_names(cursor):
            cursor.execute("DELETE FROM sqlite_stat1")


@pytest.mark.parametrize("defer_indexes", [False, True])
def test_a_bulk_load_leaves_the_tables_analyzed_and_on_postgresql_vacuumed(defer_indexes):
    """Counts then answer from an index alone (the home page's per-app counts read the whole session
    table once per app on a just-loaded PostgreSQL store whose autovacuum had not come round)."""
    tables = [model._meta.db_table for model in (Session, Event, StateChange, UserState)]
    _forget_statistics()
    fill(GeneratedApp("before", 2, 1, 2), range(2))  # rows on every table, neither analyzed nor vacuumed
    assert not any(_statistics_kept(table) for table in tables)
    bulk_fill(GeneratedApp("via_bulk", 3, 2, 2), range(3), defer_indexes=defer_indexes)
    assert all(_statistics_kept(table) for table in tables)
