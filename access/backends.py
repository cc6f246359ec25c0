"""Authentication backends: django-axes' login lockout, for logins that come with a request;
and Django's model backend with its permission read in one query."""
from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db.models import Q
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


class RoleBackend(ModelBackend):
    """Django's `ModelBackend`, reading a user's permissions (their own and their groups') in
    one query instead of two: every page and API request asks for one (`roles`)."""

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            user_obj._perm_cache = self._all_permissions(user_obj)
        return user_obj._perm_cache

    def _all_permissions(self, user_obj: Any) -> set[str]:
        perms = Permission.objects.all()
        if not user_obj.is_superuser:
            perms = perms.filter(Q(user=user_obj) | Q(group__user=user_obj))
        names = perms.values_list("content_type__app_label", "codename").order_by().distinct()
        return {f"{app_label}.{codename}" for app_label, codename in names}
