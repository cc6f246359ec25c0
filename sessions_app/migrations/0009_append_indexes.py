"""Fewer indexes for an append to write (issue #16).

- The foreign keys `Event.session`, `StateChange.app` and `StateChange.session`
  lose their own single-column index: a composite index already leads with
  each (`unique_event_seq`, `change_key_history`, `change_session_seq`), which
  serves the lookups and the cascades alike.
- `event_rewind` indexes only ADK's rewind events (its readers ask for
  `rewind_before IS NOT NULL`), not every event's NULL.

The single-column indexes are dropped by name as the database reports them
(Django named them), in SQL, so that SQLite does not remake the event table:
a remade table would lose migration 0008's search triggers.
"""
from django.db import migrations, models

# (model, field): foreign keys whose own index goes.
UNINDEXED = [("event", "session"), ("statechange", "app"), ("statechange", "session")]


def _own_indexes(schema_editor, model, column: str) -> list[str]:
    with schema_editor.connection.cursor() as cursor:
        constraints = schema_editor.connection.introspection.get_constraints(cursor, model._meta.db_table)
    return [
        name for name, c in constraints.items()
        if c["index"] and c["columns"] == [column] and not c["unique"] and not c["primary_key"] and not c.get("check")
    ]


def drop_fk_indexes(apps, schema_editor):
    for model_name, field_name in UNINDEXED:
        model = apps.get_model("sessions_app", model_name)
        for name in _own_indexes(schema_editor, model, model._meta.get_field(field_name).column):
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def create_fk_indexes(apps, schema_editor):
    for model_name, field_name in UNINDEXED:
        model = apps.get_model("sessions_app", model_name)
        field = model._meta.get_field(field_name)
        if not _own_indexes(schema_editor, model, field.column):
            schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0008_event_search")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(drop_fk_indexes, create_fk_indexes, elidable=False)],
            state_operations=[
                migrations.AlterField(
                    model_name="event", name="session",
                    field=models.ForeignKey(db_index=False, on_delete=models.deletion.CASCADE,
                                            related_name="events", to="sessions_app.session"),
                ),
                migrations.AlterField(
                    model_name="statechange", name="app",
                    field=models.ForeignKey(db_index=False, on_delete=models.deletion.CASCADE,
                                            related_name="state_changes", to="sessions_app.app"),
                ),
                migrations.AlterField(
                    model_name="statechange", name="session",
                    field=models.ForeignKey(db_index=False, null=True, on_delete=models.deletion.SET_NULL,
                                            related_name="state_changes", to="sessions_app.session"),
                ),
            ],
        ),
        migrations.RemoveIndex(model_name="event", name="event_rewind"),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(condition=models.Q(("rewind_before__isnull", False)), fields=["session", "rewind_before"],
                               name="event_rewind"),
        ),
    ]
