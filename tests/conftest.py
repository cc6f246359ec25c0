from __future__ import annotations

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections

from adkui.adk import DjangoSessionService


@pytest.fixture
def service() -> DjangoSessionService:
    yield DjangoSessionService()
    # Async tests reach the database from asgiref's worker thread; close that
    # thread's connections so the test database can be dropped afterwards.
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
