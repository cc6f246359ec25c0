"""`manage.py load_demo`: run the bundled demo agent once so a newcomer sees a real timeline."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from runtime_app.agents import agent_names, agents_dir
from runtime_app.demo import DEMO_APP, load_demo


class Command(BaseCommand):
    help = "Create the demo session by running the bundled demo agent on the offline scripted model."

    def handle(self, *args: object, **options: object) -> None:
        if DEMO_APP not in agent_names():  # another agents folder (`up --agents-dir`, ADKUI_AGENTS_DIR)
            self.stdout.write(f"No demo: the agents folder {agents_dir()} has no {DEMO_APP!r} agent.")
            return
        session = load_demo()
        self.stdout.write(f"Demo session {session.id!r} of app {session.app_name!r} is ready.")
