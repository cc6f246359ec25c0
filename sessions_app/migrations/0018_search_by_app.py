"""SQLite: each event's app in the search index, so a search walks only its own app's hits.

A search read the index's hits newest first and joined each to its event and session until
a page of the asked app's was found: a word common in another app with newer events was
walked past event by event (in the scale bench's store, an app of 1 000 sessions searched
for "answer" behind another app's 50 000 newer events: 48.6 ms, against 10.5 with the
other app empty). The index now holds a second column, `app`, with one token per event,
`app<pk of its app>`; a search matches its words in `body` and that token in `app`, and
FTS5 intersects the two lists of rowids itself, skipping ahead in each.

SQLite's FTS5 here (3.40) has no `contentless_delete`: a contentless table forgets a row
only when given the exact values it indexed, so the delete trigger looks the app up from
the event's session, as the insert trigger does. Django deletes a session's events before
the session, in the same transaction, so that row is still there.

The table is remade and every stored event indexed again (as 0008 did). PostgreSQL is
untouched: its events are filtered by app through the join, with the vector stored
(0017). Undoing this puts 0008's index back.
"""
import importlib

from django.db import migrations

_0008 = importlib.import_module("sessions_app.migrations.0008_event_search")
FTS, _document = _0008.FTS, _0008._document
TRIGGERS = [f"{FTS}_insert", f"{FTS}_delete", f"{FTS}_update"]


def _app_token(row: str) -> str:
    return f"(SELECT 'app' || s.app_id FROM sessions_app_session AS s WHERE s.id = {row}.session_id)"


def _index(row: str) -> str:
    return f"INSERT INTO {FTS} (rowid, body, app) VALUES ({row}.id, {_document(f'{row}.data')}, {_app_token(row)});"


def _forget(row: str) -> str:
    return (f"INSERT INTO {FTS} ({FTS}, rowid, body, app)"
            f" VALUES ('delete', {row}.id, {_document(f'{row}.data')}, {_app_token(row)});")


FORWARD = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"DROP TABLE IF EXISTS {FTS}",
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(body, app, content='', tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON sessions_app_event BEGIN {_index('new')} END",
    f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON sessions_app_event BEGIN {_forget('old')} END",
    f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF data ON sessions_app_event"
    f" BEGIN {_forget('old')} {_index('new')} END",
    f"INSERT INTO {FTS} (rowid, body, app) SELECT e.id, {_document('e.data')}, 'app' || s.app_id"
    " FROM sessions_app_event AS e JOIN sessions_app_session AS s ON s.id = e.session_id",
]
BACKWARD = _0008.SQLITE_BACKWARD + _0008.SQLITE_FORWARD


def _run(schema_editor, statements) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for sql in statements:
            schema_editor.execute(sql, params=None)


def forward(apps, schema_editor) -> None:
    _run(schema_editor, FORWARD)


def backward(apps, schema_editor) -> None:
    _run(schema_editor, BACKWARD)


class Migration(migrations.Migration):

    dependencies = [("sessions_app", "0017_stored_search_vector")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
