"""Who may see what. Local dev (DEBUG on, served on localhost) needs no login;
anywhere else every page, API route and websocket needs a logged-in user,
and scripts use API tokens (`manage.py drf_create_token <username>`)."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponseBase
from rest_framework.permissions import BasePermission


def login_required() -> bool:
    return not settings.ADKUI_LOCAL_DEV


class LoginRequiredUnlessLocalDev(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, off in local dev. API views are left
    to DRF, which also accepts tokens and answers 401/403 instead of redirecting."""

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        if not login_required():
            return None
        from rest_framework.views import APIView  # DRF's settings import this module

        view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class IsAuthenticatedUnlessLocalDev(BasePermission):
    message = "Authentication credentials were not provided: log in, or send 'Authorization: Token <key>'."

    def has_permission(self, request: Any, view: Any) -> bool:
        return not login_required() or bool(request.user and request.user.is_authenticated)


def websocket_allowed(scope: dict[str, Any]) -> bool:
    user = scope.get("user")
    return not login_required() or bool(user is not None and user.is_authenticated)
