"""`manage.py fill_scale N`: N generated sessions in a local store, to try the UI at scale."""
from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.generated import GeneratedApp, bulk_fill, fill
from sessions_app.models import Session


class Command(BaseCommand):
    help = ("Fill the store with N generated sessions of one app (over N/--per-user users, --events events each, "
            "state changes in every scope, one in twenty ending in an error), through the same write path as "
            "an agent run. Run again to add N more.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("sessions", type=int, help="sessions to add")
        parser.add_argument("--app", default="scale_demo", help="the app they belong to (default: scale_demo)")
        parser.add_argument("--events", type=int, default=5, help="events a session (default: 5)")
        parser.add_argument("--per-user", type=int, default=50, help="sessions a user (default: 50)")
        parser.add_argument("--bulk", action="store_true",
                            help="write the same rows many sessions to a statement (COPY on PostgreSQL): "
                                 "minutes, not hours, for millions of events; no other writer may run meanwhile, and on "
                                 "PostgreSQL the event and change indexes are built once at the end, in one transaction")

    def handle(self, *args: Any, **options: Any) -> None:
        count, events, per_user = options["sessions"], options["events"], options["per_user"]
        for name, value in (("sessions", count), ("--events", events), ("--per-user", per_user)):
            if value < 1:
                raise CommandError(f"{name} must be at least 1, not {value}.")
        # Numbered on from what the app holds, so a second run adds sessions rather than colliding.
        start = Session.objects.filter(app__name=options["app"]).count()
        generated = GeneratedApp(options["app"], start + count, max(1, (start + count) // per_user), events)
        began = time.perf_counter()
        if options["bulk"]:
            bulk_fill(generated, range(start, start + count), defer_indexes=True)
        else:
            fill(generated, range(start, start + count))
        self.stdout.write(f"Added {count} sessions ({count * events} events) to app {options['app']!r} "
                          f"in {time.perf_counter() - began:.0f} s; it holds {start + count}.")
