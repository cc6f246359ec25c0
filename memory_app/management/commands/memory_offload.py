"""`manage.py memory_offload`: offload idle sessions to memory (the `timeout` trigger).

Searches already do this for the user they search, so run it from cron only
when memory should fill up without anyone searching.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memory_app import conf, services


class Command(BaseCommand):
    help = "Offload sessions idle for ADKUI_MEMORY_IDLE_SECONDS to long-term memory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--app", help="only this app")
        parser.add_argument("--user", help="only this user")

    def handle(self, *args: object, **options: str | None) -> None:
        if "timeout" not in conf.memory_offload_triggers():
            self.stdout.write("ADKUI_MEMORY_OFFLOAD does not include 'timeout'; nothing to do.")
            return
        count = services.memory_offload_idle(app_name=options.get("app"), user_id=options.get("user"))
        self.stdout.write(f"Offloaded {count} idle session{'s' if count != 1 else ''} to memory.")
