"""PostgreSQL: each event's text vector stored in a column, not computed by every search.

A common word's search walks the primary key backwards until 21 events of the app
match. The filter ran `sessions_app_event_search_vector(data)` on every event walked
(a PL/pgSQL function over the event's JSON, 0.17 ms an event on a slow 2-core machine)
before the join could tell the event was of another app: with 1 000 newer events of
another app in the store, a search of the first app took 176 ms at the server. Stored,
a walked event costs a comparison with its vector. The GIN index moves to the column (the
function still runs once an insert, as it did for the index), with the statistics of
migration 0015. Adding the column computes it for every stored event, once.
"""
from django.db import migrations

INDEX = "sessions_app_event_search"
FORWARD = [
    "ALTER TABLE sessions_app_event ADD COLUMN search tsvector"
    " GENERATED ALWAYS AS (sessions_app_event_search_vector(data)) STORED",
    f"DROP INDEX IF EXISTS {INDEX}",
    f"CREATE INDEX {INDEX} ON sessions_app_event USING gin (search)",
    "ALTER TABLE sessions_app_event ALTER COLUMN search SET STATISTICS 1000",
]
BACKWARD = [
    f"DROP INDEX IF EXISTS {INDEX}",
    "ALTER TABLE sessions_app_event DROP COLUMN IF EXISTS search",
    f"CREATE INDEX {INDEX} ON sessions_app_event USING gin (sessions_app_event_search_vector(data))",
    f"ALTER INDEX {INDEX} ALTER COLUMN 1 SET STATISTICS 1000",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0016_partial_fork_indexes"),
    ]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
