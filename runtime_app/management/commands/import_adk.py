"""`manage.py import_adk SOURCE`: bring sessions from ADK's own stores into adkui."""
from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runtime_app.adk_import import ImportSourceError, ImportSummary, import_source


class Command(BaseCommand):
    help = (
        "Import sessions, events, state and artifacts from an `adk web` agents folder, a "
        "SqliteSessionService file or a DatabaseSessionService URL. Only what is new is imported."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("source", help="agents folder, path/to/session.db, or sqlite+aiosqlite:///… / postgresql+psycopg://…")
        parser.add_argument("--app", help="app name (required for a database URL; filters an agents folder)")
        parser.add_argument("--user", help="only this user's sessions")
        parser.add_argument("--follow", action="store_true", help="keep polling the source for new events")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between polls with --follow")

    def handle(self, *args: Any, **options: Any) -> None:
        summary = ImportSummary()
        try:
            import_source(options["source"], app=options["app"], user=options["user"], follow=options["follow"],
                          interval=options["interval"], progress=self._progress, summary=summary)
        except ImportSourceError as exc:
            raise CommandError(str(exc)) from exc
        except KeyboardInterrupt:
            self.stderr.write("\nstopped")
        finally:
            sys.stderr.write("\n")
        for line in summary.lines():
            self.stdout.write(line)

    def _progress(self, done: int, total: int, app: str) -> None:
        sys.stderr.write(f"\rimporting {app} sessions {done}/{total}")
        sys.stderr.flush()
