"""One row per ADK event id in a session, as ADK's SQL service keeps it.

Before this, a client retry racing its own first POST could store an event
twice. Such copies are not removed here: each has its own sequence number,
state changes and place in the timeline, and deleting one would leave a gap in
the numbering the timeline and rewind rely on. The migration stops instead,
naming them, so whoever runs it decides (the message gives a one-line fix).
"""
from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import Count

SHOWN = 20
RENAME_SQL = (
    "UPDATE sessions_app_event SET event_id = event_id || '~dup' || seq WHERE EXISTS ("
    "SELECT 1 FROM sessions_app_event f WHERE f.session_id = sessions_app_event.session_id "
    "AND f.event_id = sessions_app_event.event_id AND f.seq < sessions_app_event.seq);"
)


def refuse_duplicates(apps: Any, schema_editor: Any) -> None:
    events = apps.get_model("sessions_app", "Event").objects.using(schema_editor.connection.alias)
    dupes = list(
        events.values("session_id", "event_id").annotate(n=Count("id")).filter(n__gt=1)
        .order_by("session_id", "event_id")
    )
    if not dupes:
        return
    lines = []
    for d in dupes[:SHOWN]:
        seqs = events.filter(session_id=d["session_id"], event_id=d["event_id"]).order_by("seq")
        lines.append(f"  session pk {d['session_id']}, event {d['event_id']!r}: "
                     + ", ".join(f"#{s}" for s in seqs.values_list("seq", flat=True)))
    more = f"\n  ... and {len(dupes) - SHOWN} more" if len(dupes) > SHOWN else ""
    raise RuntimeError(
        f"Cannot make ADK event ids unique per session: {len(dupes)} are stored more than once "
        "(a client retry raced its first request before this was enforced):\n"
        + "\n".join(lines) + more
        + "\nKeep the first copy's id and rename the later copies, for example with\n  "
        + RENAME_SQL + "\nthen run migrate again."
    )


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0003_event_rewind_before"),
    ]

    operations = [
        migrations.RunPython(refuse_duplicates, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="event", name="event_adk_id"),
        migrations.AddConstraint(
            model_name="event",
            constraint=models.UniqueConstraint(fields=("session", "event_id"), name="unique_event_id"),
        ),
    ]
