"""Full-text search over events: one search document per event, kept by the database.

The document of an event is what a person would search it by: the text of its
content parts and its error message, the names of the tools it calls or answers,
the keys and values of their arguments and responses, and the keys and values
of its state delta (`Event.data` holds ADK's `model_dump(mode="json")`, so the
paths are snake_case). Its first 100,000 characters are indexed, which keeps
PostgreSQL's tsvector under its 1 MB limit for any event we accept.

The database builds and drops it with the row, so `event_append`, the hot
path, runs no extra Python and a deleted event (or session, or app) leaves
nothing behind:

- PostgreSQL: a GIN index on `sessions_app_event_search_vector(data)`, an
  IMMUTABLE function (no stored column, no table rewrite). Config `simple`,
  not `english`: events hold identifiers, tool names, codes and text in any
  language, which stemming and stop words would mangle ("running_total",
  "is_final", a search for "the"); and `simple` matches what SQLite's FTS5
  (unicode61, no stemming) finds, so both databases answer alike. ASCII
  punctuation is turned into spaces first, as unicode61 does, so "17" finds
  "A-17" and "foo" finds "/tmp/foo.txt" (PostgreSQL's parser would keep
  "-17" and the whole path as single tokens).
- SQLite: a contentless FTS5 table (`content=''`: the text is not stored twice)
  whose rowid is the event's id, filled by triggers on insert, delete and an
  update of `data`. A contentless table forgets a row only when given the
  exact text it indexed, so the delete trigger recomputes it from `old.data`
  with the same deterministic expression. Snippets are built in Python from
  the event JSON (sessions_app/search.py), the same way on both databases.

On SQLite a later migration that makes Django remake `sessions_app_event`
(most AlterField/AddField on Event) drops these triggers with the old table;
such a migration must install them again (tests/sessions_app/test_search_migration.py
checks they exist after all migrations).
"""
import string

from django.db import migrations

FTS = "sessions_app_event_search"
MAX_CHARS = 100_000
PUNCTUATION = string.punctuation  # ASCII only: no locale decides what it holds

# ---- PostgreSQL ---------------------------------------------------------------------

# PL/pgSQL, not SQL: a SQL function with a query in it is planned again for
# every row inserted (0.6 ms an event), a PL/pgSQL one once per connection.
# No JIT: the estimated cost of the JSON path queries would have every call
# compiled (about 20 ms an event).
PG_FUNCTION = f"""
CREATE FUNCTION sessions_app_event_search_vector(data jsonb) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET jit = off AS $fn$
BEGIN
  RETURN (
    WITH roots AS (
      SELECT jsonb_path_query(data, 'lax $.content.parts[*].function_call.args') AS root
      UNION ALL SELECT jsonb_path_query(data, 'lax $.content.parts[*].function_response.response')
      UNION ALL SELECT jsonb_path_query(data, 'lax $.actions.state_delta')
    ), found AS (
      SELECT jsonb_path_query(data, 'lax $.content.parts[*].text') AS value
      UNION ALL SELECT jsonb_path_query(data, 'lax $.error_message')
      UNION ALL SELECT jsonb_path_query(data, 'lax $.content.parts[*].function_call.name')
      UNION ALL SELECT jsonb_path_query(data, 'lax $.content.parts[*].function_response.name')
      UNION ALL SELECT to_jsonb(jsonb_path_query(root, 'strict $.** ? (@.type() == "object").keyvalue().key'))
        FROM roots
      UNION ALL SELECT jsonb_path_query(
          root, 'strict $.** ? (@.type() == "string" || @.type() == "number" || @.type() == "boolean")')
        FROM roots
    )
    SELECT to_tsvector('simple'::regconfig, translate(
      left(coalesce(string_agg(value #>> '{{}}', ' '), ''), {MAX_CHARS}),
      $punct${PUNCTUATION}$punct$, '{" " * len(PUNCTUATION)}'))
    FROM found
  );
END
$fn$
"""
PG_FORWARD = [
    PG_FUNCTION,
    # Not CONCURRENTLY: that cannot run inside the migration's transaction, and
    # building it takes one pass over the events.
    f"CREATE INDEX {FTS} ON sessions_app_event USING gin (sessions_app_event_search_vector(data))",
]
PG_BACKWARD = [
    f"DROP INDEX IF EXISTS {FTS}",
    "DROP FUNCTION IF EXISTS sessions_app_event_search_vector(jsonb)",
]

# ---- SQLite -------------------------------------------------------------------------


def _key_and_leaf(tree: str) -> str:
    """A json_tree row as words: its key (not the root's) and, for a leaf, its value."""
    return (
        f"trim(coalesce(CASE WHEN {tree}.parent IS NOT NULL AND typeof({tree}.key) = 'text' THEN {tree}.key END, '')"
        f" || ' ' || coalesce(CASE {tree}.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'"
        f" WHEN 'object' THEN NULL WHEN 'array' THEN NULL ELSE {tree}.atom END, ''))"
    )


def _document(data: str) -> str:
    """The search document of the event JSON `data`, as one deterministic SQL expression."""
    parts = f"json_each({data}, '$.content.parts') AS p"
    return f"""substr(coalesce((SELECT group_concat(v, ' ') FROM (
        SELECT json_extract(p.value, '$.text') AS v FROM {parts}
        UNION ALL SELECT json_extract({data}, '$.error_message')
        UNION ALL SELECT json_extract(p.value, '$.function_call.name') FROM {parts}
        UNION ALL SELECT json_extract(p.value, '$.function_response.name') FROM {parts}
        UNION ALL SELECT {_key_and_leaf('t')} FROM {parts}, json_tree(p.value, '$.function_call.args') AS t
        UNION ALL SELECT {_key_and_leaf('t')} FROM {parts}, json_tree(p.value, '$.function_response.response') AS t
        UNION ALL SELECT {_key_and_leaf('t')} FROM json_tree({data}, '$.actions.state_delta') AS t
    )), ''), 1, {MAX_CHARS})"""


def _index(row: str) -> str:
    return f"INSERT INTO {FTS} (rowid, body) VALUES ({row}.id, {_document(f'{row}.data')});"


def _forget(row: str) -> str:
    return f"INSERT INTO {FTS} ({FTS}, rowid, body) VALUES ('delete', {row}.id, {_document(f'{row}.data')});"


SQLITE_FORWARD = [
    # unicode61 without diacritic folding: the tokens PostgreSQL's `simple` gives.
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(body, content='', tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON sessions_app_event BEGIN {_index('new')} END",
    f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON sessions_app_event BEGIN {_forget('old')} END",
    f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF data ON sessions_app_event"
    f" BEGIN {_forget('old')} {_index('new')} END",
    f"INSERT INTO {FTS} (rowid, body) SELECT e.id, {_document('e.data')} FROM sessions_app_event AS e",
]
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"DROP TABLE IF EXISTS {FTS}",
]

STATEMENTS = {
    "postgresql": (PG_FORWARD, PG_BACKWARD),
    "sqlite": (SQLITE_FORWARD, SQLITE_BACKWARD),
}


def _run(schema_editor, forward: bool) -> None:
    statements = STATEMENTS.get(schema_editor.connection.vendor)
    if statements is None:
        return  # another database: no search index (search answers with its own error)
    for sql in statements[0 if forward else 1]:
        schema_editor.execute(sql, params=None)


def install(apps, schema_editor) -> None:
    _run(schema_editor, forward=True)


def uninstall(apps, schema_editor) -> None:
    _run(schema_editor, forward=False)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0007_session_health")]

    operations = [migrations.RunPython(install, uninstall, elidable=False)]
