"""django-axes' login lockout, for logins that come with a request."""
from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginLockoutBackend(AxesStandaloneBackend):
    """Refuses a locked-out username and address before any password is checked.

    Every login over HTTP (the login form, the admin's) passes its request.
    `authenticate()` called without one (Django's test client, a script) has no
    address to count by, so it is let through to the next backend, which is
    what it would meet anyway outside a web request.
    """

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
