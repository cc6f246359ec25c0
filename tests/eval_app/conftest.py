from __future__ import annotations

from pathlib import Path

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections

from eval_app import services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.models import EvalSet
from sessions_app import db_threads

DEMO_DIR = Path(__file__).resolve().parents[2] / "eval_app" / "demo"
DEMO_FILE = DEMO_DIR / "trip_planner.evalset.json"
AGENT = "trip_planner"


@pytest.fixture
def demo_bytes() -> bytes:
    return DEMO_FILE.read_bytes()


@pytest.fixture
def demo_set(db) -> EvalSet:
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    return services.eval_set_import(parsed=parsed, app_name=AGENT)


@pytest.fixture
def async_db_threads():
    """Close the connections asgiref's worker thread opened, so the test database can be dropped."""
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
    db_threads.close_connections()  # and those of the session service's own threads


