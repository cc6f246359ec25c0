"""CORS for the origins in ADKUI_CORS_ORIGINS, on /api/ only, off by default: adk-web served
from elsewhere (`adk web` on another port) pointed at our API."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db
ADK_WEB = "http://localhost:8000"
ALLOW = "Access-Control-Allow-Origin"


@pytest.fixture
def allowed(settings: Any) -> Any:
    settings.CORS_ALLOWED_ORIGINS = [ADK_WEB]
    return settings


def preflight(client: Client, origin: str, path: str = "/api/run_sse") -> Any:
    return client.options(path, headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "content-type,x-adk-telemetry-request"})


def test_off_by_default(client: Client) -> None:
    assert ALLOW not in client.get("/api/list-apps", headers={"Origin": ADK_WEB})
    assert ALLOW not in preflight(client, ADK_WEB)


def test_an_allowed_origin_may_call_the_api(client: Client, allowed: Any) -> None:
    response = client.get("/api/list-apps", headers={"Origin": ADK_WEB})
    assert response.status_code == 200 and response[ALLOW] == ADK_WEB
    answer = preflight(client, ADK_WEB)
    assert answer.status_code == 200 and answer[ALLOW] == ADK_WEB
    assert "POST" in answer["Access-Control-Allow-Methods"]
    assert "x-adk-telemetry-request" in answer["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in answer


def test_refusals_reach_an_allowed_origin_too(client: Client, allowed: Any) -> None:
    """adk-web on that origin can read why: a 404, or a path refused before any view runs."""
    missing = client.get("/api/no-such-route", headers={"Origin": ADK_WEB})
    assert missing.status_code == 404 and missing[ALLOW] == ADK_WEB
    refused = client.get("/api/list-apps?x=%00", headers={"Origin": ADK_WEB})
    assert refused.status_code == 400 and refused[ALLOW] == ADK_WEB


def test_other_origins_and_our_pages_get_no_cors(client: Client, allowed: Any) -> None:
    assert ALLOW not in client.get("/api/list-apps", headers={"Origin": "http://evil.example"})
    assert ALLOW not in preflight(client, "http://evil.example")
    assert ALLOW not in client.get("/", headers={"Origin": ADK_WEB})
    assert ALLOW not in client.get("/dev-ui/", headers={"Origin": ADK_WEB})


def test_the_origins_come_from_the_environment() -> None:
    env = {**os.environ, "ADKUI_CORS_ORIGINS": f" {ADK_WEB}, https://adk.example.com ,",
           "DJANGO_SETTINGS_MODULE": "adkui.settings"}
    code = "from django.conf import settings; print(settings.CORS_ALLOWED_ORIGINS)"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=Path(__file__).resolve().parents[2],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([ADK_WEB, "https://adk.example.com"])
