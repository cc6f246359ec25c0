"""`manage.py db_worker`: django-tasks-db's worker, with ADK's evaluation engine imported
before it takes a task (`eval_app.apps.warm_engine`): a worker runs nothing but eval cases, so it pays
that import at its start, not in its first run while the run's page waits."""
from __future__ import annotations

import os
from typing import Any

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorkerCommand

import eval_app.tasks  # noqa: F401  the tasks this worker runs, and the engine they run on
from eval_app.apps import warm_engine


class Command(DatabaseWorkerCommand):
    def handle(self, *args: Any, **options: Any) -> None:
        # With --reload this process only watches files and restarts a child that runs the tasks.
        if not options["reload"] or os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            warm_engine()
        super().handle(*args, **options)
