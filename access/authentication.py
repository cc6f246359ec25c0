"""DRF's session authentication, with a CSRF check adk-web's calls pass.

adk-web (served at /dev-ui/) calls /api/ with the login's session cookie but
never sends Django's CSRF token: Angular's HttpClient adds one only to
relative URLs and adk-web's are absolute, and its server-sent-events fetch
sends none. Browsers mark every request with where it came from (Fetch
Metadata: `Sec-Fetch-Site`, which no page can set), so a request a page of
this very origin sent needs no token: another site's page can neither send
one marked so nor read the answer. Every other request with a session
cookie still needs Django's token, as before. API tokens need neither.
"""
from __future__ import annotations

from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request


def sent_by_this_origin(request: Request) -> bool:
    """Sent by a page of this origin, as the browser says (the Origin header agrees)."""
    if request.headers.get("Sec-Fetch-Site") != "same-origin":
        return False
    scheme = "https" if request.is_secure() else "http"
    return request.headers.get("Origin") == f"{scheme}://{request.get_host()}"


class SameOriginSessionAuthentication(SessionAuthentication):
    def enforce_csrf(self, request: Request) -> None:
        if not sent_by_this_origin(request):
            super().enforce_csrf(request)


class SameOriginSessionScheme(SessionScheme):
    """The OpenAPI schema's cookie login, as for DRF's own session authentication."""

    target_class = "access.authentication.SameOriginSessionAuthentication"
