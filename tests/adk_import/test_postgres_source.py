from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from runtime_app.adk_import import import_source

from .conftest import APP, assert_same_as_source, run_turns

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.django_db
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of its own for ADK's DatabaseSessionService, dropped afterwards."""
    name = f"adk_import_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_a_postgres_database_session_service_is_imported_and_followed(pg_url: str) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    async def build() -> None:
        service = DatabaseSessionService(pg_url)
        await run_turns(service, user="ann", session_id="p1", messages=["plan a trip to Paris"],
                        state={"k": 1, "user:name": "Ann"})
        await service.close()

    asyncio.run(build())
    call_command("import_adk", pg_url, "--app", APP)

    def more(seconds: float) -> None:
        async def turn() -> None:
            service = DatabaseSessionService(pg_url)
            await run_turns(service, user="ann", session_id="p1", messages=["plan a trip to Oslo"])
            await service.close()
        asyncio.run(turn())

    summary = import_source(pg_url, app=APP, follow=True, max_rounds=2, interval=0.01, sleep=more)
    assert summary.events_new > 0 and summary.sessions_new == 0

    async def compare() -> DatabaseSessionService:
        return DatabaseSessionService(pg_url)

    source = asyncio.run(compare())
    assert_same_as_source(source, app=APP, user="ann", session_id="p1")
    asyncio.run(source.close())
