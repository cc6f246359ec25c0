"""The API's CSRF check with a login cookie: Django's token, or the browser's
word (Fetch Metadata) that a page of this same origin sent the request, as
adk-web's calls are sent. Nothing else passes, and a refused request changes nothing."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sessions_app.models import Session as SessionRow

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db
URL = "/api/apps/trip_planner/users/u/sessions"
HERE = "http://testserver"


@pytest.fixture
def editor(production: Any, make_user: Any) -> Client:
    make_user("editor")
    client = Client(enforce_csrf_checks=True)
    assert client.login(username="editor", password=PASSWORD)
    return client


def create(client: Client, **headers: str) -> Any:
    return client.post(URL, json.dumps({"sessionId": "s1"}), content_type="application/json", headers=headers)


def test_a_page_of_this_origin_needs_no_token(editor):
    response = create(editor, sec_fetch_site="same-origin", origin=HERE)
    assert response.status_code == 200, response.content
    assert SessionRow.objects.filter(session_id="s1").exists()


@pytest.mark.parametrize("headers", [
    {},  # an older browser, or a client that says nothing: Django's token, as before
    {"sec_fetch_site": "same-site", "origin": "http://other.testserver"},
    {"sec_fetch_site": "cross-site", "origin": "https://evil.example"},
    {"sec_fetch_site": "same-origin", "origin": "https://evil.example"},  # the two disagree
    {"sec_fetch_site": "same-origin"},  # no Origin: browsers send one with every POST
    {"sec_fetch_site": "none", "origin": HERE},  # typed in the address bar, not sent by a page
])
def test_anything_else_without_the_token_is_refused_and_changes_nothing(editor, headers):
    response = create(editor, **headers)
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert not SessionRow.objects.exists()


def test_the_token_still_works_without_fetch_metadata(editor):
    editor.get("/accounts/login/")  # a page with a form sets the CSRF cookie
    token = editor.cookies["csrftoken"].value
    response = create(editor, x_csrftoken=token)
    assert response.status_code == 200, response.content
