"""`manage.py up`: migrate, load the demo, and serve (HTTP + websockets) in one step."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtime_app.agents import agent_names


class Command(BaseCommand):
    help = "Migrate the database, load the demo session, and start the dev server (daphne, with websockets)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000",
                            help="[host:]port, as runserver takes it (default 127.0.0.1:8000)")
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo session")
        parser.add_argument("--agents-dir", help="folder of ADK agent packages, as `adk web` takes (default: ADKUI_AGENTS_DIR)")

    def handle(self, *args: object, addrport: str, no_demo: bool, agents_dir: str | None, **options: object) -> None:
        if agents_dir:
            folder = Path(agents_dir).expanduser().resolve()
            if not folder.is_dir():
                raise CommandError(f"--agents-dir: no folder at {folder}.")
            settings.ADKUI_AGENTS_DIR = str(folder)
            no_demo = no_demo or "trip_planner" not in agent_names()
        host = addrport.rsplit(":", 1)[0] if ":" in addrport else "127.0.0.1"
        if settings.ADKUI_LOCAL_DEV and host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            raise CommandError(
                f"Local dev mode (no login) serves only on localhost, not {host}. "
                "Set ADKUI_LOCAL_DEV=0 to require logins, then serve it wider."
            )
        call_command("migrate", interactive=False, verbosity=0)
        if not no_demo:
            call_command("load_demo")
        call_command("runserver", addrport, use_reloader=False)
