"""`manage.py db_worker`: django-tasks-db's worker, with ADK's evaluation engine imported on a
thread of its own from its start (`eval_app.apps.warm_engine_in_background`): the worker runs
nothing but eval cases, and its first case paid that import (10 s here) while its run's page
said "queued"; a case that comes meanwhile waits for it (`wait_for_engine`)."""
from __future__ import annotations

import os
from typing import Any

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorkerCommand

from eval_app.apps import warm_engine_in_background


class Command(DatabaseWorkerCommand):
    def handle(self, *args: Any, **options: Any) -> None:
        # With --reload this process only watches files and restarts a child that runs the tasks.
        if not options["reload"] or os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            warm_engine_in_background()
        super().handle(*args, **options)
