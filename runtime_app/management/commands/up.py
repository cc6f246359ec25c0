"""`manage.py up`: migrate, load the demo, and serve (HTTP + websockets) in one
step, with one task worker (`manage.py db_worker`, which runs eval cases) beside
the server, stopped with it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from channels.routing import get_default_application
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.signals import request_finished
from django_tasks import task_backends
from django_tasks_db.backend import DatabaseBackend

from eval_app.apps import warm_engine_in_background


class Command(BaseCommand):
    # Checked in handle(), after the refusals: the checks import the URLconf, hence every view and
    # much of ADK (seconds), which a refusal has no need to wait for.
    requires_system_checks: list[str] = []
    help = ("Migrate the database, load the demo session, and start the dev server (daphne, with websockets) "
            "and one task worker (db_worker) for eval runs.")

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
        host = addrport.rsplit(":", 1)[0] if ":" in addrport else "127.0.0.1"
        if settings.ADKUI_LOCAL_DEV and host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            raise CommandError(
                f"Local dev mode (no login) serves only on localhost, not {host}. "
                "Set ADKUI_LOCAL_DEV=0 to require logins, then serve it wider."
            )
        self.check()
        call_command("migrate", interactive=False, verbosity=0)
        if not no_demo:
            call_command("load_demo")  # says so, and loads nothing, when the agents folder has no demo agent
        # The server's application (adkui/asgi.py: every view, ADK's core with them, seconds of CPU) before
        # the worker's start, not beside it: on a busy machine the two shared the CPU, and the first page,
        # which the user waits for, came seconds later. runserver then finds it imported.
        get_default_application()
        worker = self.start_worker()
        # ADK's evaluation engine for the eval pages this server serves (the run form lists its metrics), on
        # a thread once the first page is served, not beside it: the first eval set page opened waited 8 s here.
        request_finished.connect(_warm_eval_engine, dispatch_uid=WARM_AFTER_FIRST_PAGE)
        # A SIGTERM ends the server like Ctrl+C does, so the worker is stopped with it.
        signal.signal(signal.SIGTERM, _exit)
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            stop_worker(worker)

    def start_worker(self) -> subprocess.Popen | None:
        """One `db_worker` process for eval cases, when tasks go through the database."""
        if not isinstance(task_backends["default"], DatabaseBackend):
            return None
        env = {**os.environ, "ADKUI_AGENTS_DIR": str(settings.ADKUI_AGENTS_DIR)}
        manage = Path(settings.BASE_DIR) / "manage.py"
        # --skip-checks: this process has just run them; the worker's own would import every view
        # (seconds of CPU, beside the server's start on a small machine) to run no view.
        command = [sys.executable, str(manage), "db_worker", "--no-reload", "--interval", "0.5", "--verbosity", "0",
                   "--skip-checks"]
        worker = subprocess.Popen(command, env=env)
        self.stdout.write(f"Task worker for eval runs: manage.py db_worker, pid {worker.pid}")
        return worker


WARM_AFTER_FIRST_PAGE = "adkui-up-warm-eval-engine"


def _warm_eval_engine(**kwargs: object) -> None:
    request_finished.disconnect(dispatch_uid=WARM_AFTER_FIRST_PAGE)
    warm_engine_in_background()


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


def stop_worker(worker: subprocess.Popen | None) -> None:
    if worker is None or worker.poll() is not None:
        return
    worker.terminate()  # db_worker finishes the case it runs, then exits
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
