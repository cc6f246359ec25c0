"""API rate limits (DRF throttles), off in local dev.

Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` (env
`ADKUI_THROTTLE_ANON`, `ADKUI_THROTTLE_USER`), read per request so a changed
setting applies at once. DRF checks throttles after authentication, and a
wrong token fails authentication first, so guessing tokens would never be
throttled: `ThrottledTokenAuthentication` counts wrong tokens per client
address against the anonymous rate and answers 429 once it is spent.
"""
from __future__ import annotations

from typing import Any

from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from .auth import login_required


class _LiveRate:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request: Any, view: Any) -> bool:
        if not login_required():
            return True
        return super().allow_request(request, view)  # type: ignore[misc]


class AnonRateUnlessLocalDev(_LiveRate, AnonRateThrottle):
    """Requests without a user, per client address."""


class UserRateUnlessLocalDev(_LiveRate, UserRateThrottle):
    """Requests of a logged-in user or token, per user (anonymous ones per address)."""


class _WrongTokens(_LiveRate, SimpleRateThrottle):
    """Wrong API tokens from one client address, at the anonymous rate."""

    scope = "anon"
    cache_format = "throttle_wrong_token_%(ident)s"

    def __init__(self, request: Any) -> None:
        super().__init__()
        self.key = self.cache_format % {"ident": self.get_ident(request)}
        self.history: list[float] = []

    def spent(self) -> bool:
        if not login_required() or self.rate is None:
            return False
        self.now = self.timer()
        self.history = [t for t in self.cache.get(self.key, []) if t > self.now - self.duration]
        return len(self.history) >= self.num_requests

    def count(self) -> None:
        if login_required() and self.rate is not None:
            self.spent()  # fresh history, then add this one
            self.throttle_success()


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing (429) an address that sent too many wrong tokens."""

    def authenticate(self, request: Any) -> Any:
        self._wrong_tokens = _WrongTokens(request)
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            self._wrong_tokens.count()
            raise

    def authenticate_credentials(self, key: str) -> Any:
        # Checked only when a token is sent: a spent address may still log in otherwise.
        if self._wrong_tokens.spent():
            raise Throttled(self._wrong_tokens.wait())
        return super().authenticate_credentials(key)
