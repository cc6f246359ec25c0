"""`adkui` in ADK's own service registry: `adkui://` gives ADK's tools our services
on this install's database; a malformed URI, or a second database, is refused by name."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from google.adk.cli.fast_api import get_fast_api_app
from google.adk.cli.service_registry import get_service_registry

from adkui import schemes
from adkui.adk import DjangoArtifactService, DjangoMemoryService, DjangoSessionService, register_schemes
from adkui.bootstrap import DatabaseConflictError
from sessions_app.models import Session
from tests.conftest import close_worker_connections

DEMO_AGENT = Path(__file__).resolve().parents[2] / "runtime_app" / "demo_agents" / "trip_planner"


@pytest.fixture
def registry():
    register_schemes()
    return get_service_registry()


def test_adkui_uris_give_adkuis_services(registry):
    assert isinstance(registry.create_session_service("adkui://"), DjangoSessionService)
    assert isinstance(registry.create_artifact_service("adkui://"), DjangoArtifactService)
    assert isinstance(registry.create_memory_service("adkui://", agents_dir="/x"), DjangoMemoryService)


@pytest.mark.parametrize("uri", ["adkui:foo", "adkui://somehost", "adkui:mysql://u@h/db", "adkui:postgres://"])
def test_a_malformed_uri_is_refused_by_name(registry, uri):
    with pytest.raises(schemes.SchemeError, match="Malformed adkui URI") as refused:
        registry.create_session_service(uri)
    assert repr(uri) in str(refused.value) and "adkui://" in str(refused.value)


def test_the_forms_that_name_a_database():
    assert schemes.database_url("adkui://") is None
    assert schemes.database_url("adkui:sqlite:////srv/adkui.sqlite3") == "sqlite:////srv/adkui.sqlite3"
    assert schemes.database_url("adkui:postgres://ann@db:5432/adkui") == "postgres://ann@db:5432/adkui"


def test_a_second_database_in_one_process_is_refused(registry):
    with pytest.raises(DatabaseConflictError, match="already uses the database"):
        registry.create_session_service("adkui:postgres://ann@elsewhere:5432/another")


@pytest.mark.django_db(transaction=True)
def test_a_users_own_fastapi_app_stores_into_adkui(registry, tmp_path):
    shutil.copytree(DEMO_AGENT, tmp_path / "trip_planner")
    app = get_fast_api_app(agents_dir=str(tmp_path), session_service_uri="adkui://", artifact_service_uri="adkui://",
                           memory_service_uri="adkui://", web=False)
    try:
        with TestClient(app) as client:
            created = client.post("/apps/trip_planner/users/ann/sessions/mine", json={})
            assert created.status_code == 200, created.text
            ran = client.post("/run", json={"appName": "trip_planner", "userId": "ann", "sessionId": "mine",
                                            "newMessage": {"role": "user", "parts": [{"text": "Plan a trip to Lisbon"}]}})
            assert ran.status_code == 200, ran.text
        session = Session.objects.get(app__name="trip_planner", user_id="ann", session_id="mine")
        assert session.revision == len(ran.json()) + 1  # the user's message, then what the run answered
        assert session.state["destination"] == "Lisbon"
    finally:
        close_worker_connections()


@pytest.mark.django_db
def test_the_home_page_says_how_to_point_adk_web_here(client, settings):
    page = client.get("/").content.decode()
    assert "--session_service_uri=adkui://" in page and "register_schemes()" in page
    uri = page.split('id="adkui-uri">', 1)[1].split("<", 1)[0]
    assert schemes.database_url(uri)  # a URI the scheme takes, naming this server's database
    assert settings.DATABASES["default"]["NAME"] in uri
