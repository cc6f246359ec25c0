"""Production mode: logins everywhere, API tokens, websocket session auth, deploy checks."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token

from adkui.asgi import application
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def production(settings):
    settings.ADKUI_LOCAL_DEV = False
    return settings


@pytest.fixture
def ann() -> User:
    """A logged-in editor (a user with no role sees nothing: tests/access)."""
    user = User.objects.create_user("ann", password="correct horse battery staple")
    # Permissions, not the group: a transactional test's flush removes groups, and Django recreates permissions.
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="access", codename__in=["view", "edit"]))
    return user


@pytest.fixture
def adk_session(service):
    service.create_session_sync(app_name="prod_app", user_id="u", session_id="s")
    return SessionRow.objects.get(session_id="s")


def test_local_dev_needs_no_login(client, adk_session):
    assert client.get("/").status_code == 200
    assert client.get("/api/list-apps").status_code == 200


def test_pages_redirect_anonymous_users_to_login(client, production, adk_session):
    for url in ("/", f"/sessions/{adk_session.pk}/", "/apps/prod_app/", "/evals/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    assert client.get("/accounts/login/").status_code == 200


def test_logged_in_users_see_pages(client, production, ann, adk_session):
    assert client.login(username="ann", password="correct horse battery staple")
    assert client.get(f"/sessions/{adk_session.pk}/").status_code == 200


def test_health_needs_no_login(client, production):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok", "database": "ok", "channel_layer": "ok"}


def test_api_needs_a_token_or_session(client, production, ann, adk_session):
    assert client.get("/api/list-apps").status_code in (401, 403)
    url = "/api/apps/prod_app/users/u/sessions/s/events"
    event = {"author": "script", "invocationId": "i", "actions": {"stateDelta": {"k": 1}}}
    refused = client.post(url, event, content_type="application/json")
    assert refused.status_code in (401, 403) and EventRow.objects.count() == 0
    token = Token.objects.create(user=ann)
    ok = client.post(url, event, content_type="application/json", headers={"Authorization": f"Token {token.key}"})
    assert ok.status_code == 201 and EventRow.objects.count() == 1


async def test_websockets_need_a_logged_in_user(production, adk_session):
    comm = WebsocketCommunicator(application, f"/ws/sessions/{adk_session.pk}/events/",
                                 headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert not connected and code == 4401
    await comm.disconnect()  # what the server sends after the close: the consumer ends


@pytest.mark.django_db(transaction=True)  # channels closes old connections on this thread: not a held transaction
def test_websockets_accept_a_logged_in_session(client, production, ann, adk_session):
    from asgiref.sync import async_to_sync

    client.force_login(ann)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()

    async def connect() -> bool:
        comm = WebsocketCommunicator(application, f"/ws/sessions/{adk_session.pk}/events/",
                                     headers=[(b"origin", b"http://localhost"), (b"cookie", cookie)])
        connected, _ = await comm.connect(timeout=10)
        await comm.disconnect()
        return connected

    assert async_to_sync(connect)()


async def test_websockets_from_other_origins_are_refused(adk_session):
    comm = WebsocketCommunicator(application, f"/ws/sessions/{adk_session.pk}/events/",
                                 headers=[(b"origin", b"http://evil.example")])
    connected, _ = await comm.connect(timeout=10)
    assert not connected
    await comm.disconnect()


def test_oversized_events_are_refused_before_parsing(client, settings, adk_session):
    settings.ADKUI_MAX_EVENT_BYTES = 1000
    big = {"author": "script", "content": {"parts": [{"text": "x" * 2000}]}}
    response = client.post("/api/apps/prod_app/users/u/sessions/s/events", big, content_type="application/json")
    assert response.status_code == 413 and "at most 1000 bytes" in response.json()["detail"]
    assert EventRow.objects.count() == 0


def test_check_deploy_passes_with_the_documented_production_settings():
    env = {**os.environ, "DEBUG": "0", "ADKUI_LOCAL_DEV": "0", "ALLOWED_HOSTS": "adkui.example.com",
           "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-" + "y" * 20}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_off_without_a_secret_key_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"} | {"DEBUG": "0"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "Set SECRET_KEY" in result.stderr


def test_up_refuses_to_serve_local_dev_beyond_localhost():
    result = subprocess.run([sys.executable, "manage.py", "up", "0.0.0.0:8999", "--no-demo"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "serves only on localhost" in result.stderr
