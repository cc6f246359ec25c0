"""Who may see and do what. Local dev (DEBUG on, served on localhost) needs no login;
anywhere else every page, API route and websocket needs a logged-in user (or
an API token, `manage.py drf_create_token <username>`) whose role allows the
request (`roles`): pages through `RoleRequiredUnlessLocalDev`, the API through
`HasRoleUnlessLocalDev`, websockets through `websocket_refusal`."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase
from django.urls import get_resolver
from rest_framework.permissions import BasePermission

from .roles import VIEW, permission_needed, refusal_message

CLOSE_LOGIN_REQUIRED, CLOSE_FORBIDDEN = 4401, 4403  # websocket close codes, as HTTP's 401 and 403


def login_required() -> bool:
    return not settings.ADKUI_LOCAL_DEV


def _is_api_view(view_func: Any) -> bool:
    from rest_framework.views import APIView  # DRF's settings import this module

    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return isinstance(view_class, type) and issubclass(view_class, APIView)


def _is_admin(request: HttpRequest) -> bool:
    # Django's admin checks staff status and model permissions itself.
    match = request.resolver_match
    return match is not None and "admin" in match.app_names


class RoleRequiredUnlessLocalDev(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware plus the role rule, both off in local dev.

    Anonymous users go to the login page; a logged-in user whose role lacks the
    permission gets the 403 page (an htmx request gets the 403 too, and nothing
    is swapped). API views are left to DRF, which also accepts tokens and
    answers 401/403 in JSON instead of redirecting.
    """

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        if not login_required() or _is_api_view(view_func):
            return None
        if not getattr(view_func, "login_required", True):
            return None  # the login page, /healthz, the admin's own views
        if not request.user.is_authenticated:
            return self.handle_no_permission(request, view_func)
        if _is_admin(request):
            return None
        needed = permission_needed(request.method or "GET", view_func)
        if needed is not None and not request.user.has_perm(needed):
            return _forbidden(request, refusal_message(needed))
        return None


def _forbidden(request: HttpRequest, message: str) -> HttpResponseBase:
    # The project's 403 handler, called rather than raised: a refusal is routine,
    # not worth the traceback Django logs for a raised PermissionDenied.
    handler = get_resolver(getattr(request, "urlconf", None)).resolve_error_handler(403)
    return handler(request, PermissionDenied(message))


class HasRoleUnlessLocalDev(BasePermission):
    """The same rule for every API view: GET needs view, POST/PUT/PATCH edit, DELETE delete."""

    # Anonymous requests get DRF's own "not provided" answer; this is for a role refusal.
    message = "Your role does not allow this."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not login_required():
            return True
        user = request.user
        if not (user and user.is_authenticated):
            return False
        needed = permission_needed(request.method or "GET", view)
        if needed is None or user.has_perm(needed):
            return True
        self.message = refusal_message(needed)
        return False


async def websocket_refusal(scope: dict[str, Any]) -> int | None:
    """The close code for a websocket that may not open (4401 not logged in,
    4403 no viewer role), or None when it may."""
    if not login_required():
        return None
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return CLOSE_LOGIN_REQUIRED
    if not await user.ahas_perm(VIEW):
        return CLOSE_FORBIDDEN
    return None
