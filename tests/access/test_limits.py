"""Login lockout (django-axes) and API throttles (DRF)."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db.models import F
from django.test import Client

from .conftest import PASSWORD

LOGIN = "/accounts/login/"


@pytest.fixture
def ann(make_user: Any) -> User:
    return make_user("viewer")


def _login(client: Client, username: str, password: str) -> Any:
    return client.post(LOGIN, {"username": username, "password": password})


def _logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_a_good_login_works(production, ann):
    client = Client()
    assert _login(client, ann.username, PASSWORD).status_code == 302 and _logged_in(client)


def test_after_five_wrong_passwords_even_the_right_one_is_refused(production, settings, ann):
    client = Client()
    statuses = [_login(client, ann.username, f"wrong {n}").status_code for n in range(settings.AXES_FAILURE_LIMIT)]
    assert statuses[:-1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)  # the form again, with its error
    locked = _login(client, ann.username, PASSWORD)
    assert locked.status_code == 429 and b"Too many failed logins" in locked.content
    assert not _logged_in(client)


def test_the_lockout_is_per_username_and_address(production, settings, ann, make_user):
    bob = make_user("editor")
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), ann.username, f"wrong {n}")
    assert _login(Client(), bob.username, PASSWORD).status_code == 302  # another user, same address
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert _login(elsewhere, ann.username, PASSWORD).status_code == 302  # the same user, another address


def test_the_lockout_ends_after_the_cool_off(production, settings, ann):
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), ann.username, f"wrong {n}")
    assert _login(Client(), ann.username, PASSWORD).status_code == 429
    # The cool-off passes: the recorded failures move that far into the past (no sleep).
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert _login(Client(), ann.username, PASSWORD).status_code == 302


def test_a_good_login_clears_earlier_failures(production, settings, ann):
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(Client(), ann.username, f"wrong {n}")
    assert _login(Client(), ann.username, PASSWORD).status_code == 302
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(Client(), ann.username, f"wrong again {n}")
    assert _login(Client(), ann.username, PASSWORD).status_code == 302


# ---- API throttles ---------------------------------------------------------------


@pytest.fixture
def rates(settings: Any) -> Any:
    def set_rates(anon: str | None, user: str | None) -> None:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": anon, "user": user}}

    return set_rates


def _list_apps(client: Client, token: str) -> int:
    return client.get("/api/list-apps", headers={"Authorization": f"Token {token}"}).status_code


def _wrong_token(client: Client, n: int) -> str:
    response = client.get("/api/list-apps", headers={"Authorization": f"Token {n:040x}"})
    # 403, not 401: the first authenticator (the session's) names no WWW-Authenticate scheme.
    return response.json()["detail"] if response.status_code in (401, 403) else str(response.status_code)


def test_a_user_over_the_rate_gets_429(production, rates, client_as):
    rates(anon="100/min", user="3/min")
    client = client_as("viewer")
    assert [_list_apps(client, client.token) for _ in range(4)] == [200, 200, 200, 429]
    response = client.get("/api/list-apps", headers={"Authorization": f"Token {client.token}"})
    assert "throttled" in response.json()["detail"] and int(response["Retry-After"]) > 0
    other = client_as("editor")
    assert _list_apps(other, other.token) == 200  # counted per user


def test_guessing_tokens_is_throttled_at_the_anonymous_rate(production, rates, client_as):
    rates(anon="3/min", user="100/min")
    client = client_as("viewer")
    assert [_wrong_token(Client(), n) for n in range(3)] == ["Invalid token."] * 3
    assert _list_apps(Client(), "f" * 40) == 429
    assert _list_apps(Client(), client.token) == 429  # from this address, until the window passes
    assert client.get("/api/list-apps").status_code == 200  # a logged-in browser sends no token


def test_local_dev_is_not_throttled(rates, db):
    rates(anon="1/min", user="1/min")
    client = Client()
    assert [client.get("/api/list-apps").status_code for _ in range(3)] == [200, 200, 200]
    assert [_wrong_token(client, n) for n in range(3)] == ["Invalid token."] * 3


def test_the_default_rates_are_generous(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] == {"anon": "60/min", "user": "1200/min"}
