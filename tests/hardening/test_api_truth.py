"""The API tells the truth (#29): what it answers is what its schema says, for every method."""
from __future__ import annotations

import json

import pytest
from django.test import Client


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_an_unknown_api_route_is_a_json_404_for_every_method(method: str) -> None:
    """Writes used to meet Django's HTML CSRF page (403) before any route was looked up."""
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method, "/api/no/such/route", b"{}", content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "/api/no/such/route" in response.json()["detail"]


@pytest.mark.django_db
def test_a_csrf_refusal_under_api_is_json(rf) -> None:
    from adkui.errors import csrf_failure

    api = csrf_failure(rf.post("/api/anything"), reason="CSRF token missing.")
    page = csrf_failure(rf.post("/sessions/1/fork/"), reason="CSRF token missing.")
    assert api.status_code == page.status_code == 403
    assert api["Content-Type"] == "application/json" and "CSRF token missing." in json.loads(api.content)["detail"]
    assert page["Content-Type"].startswith("text/html")
