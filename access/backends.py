"""Authentication backends: django-axes' login lockout, for logins that come with a request;
and Django's model backend with its user and permissions read in plain statements."""
from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.http import HttpRequest

import plain_sql


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
    """Django's `ModelBackend`, reading a request's user, and that user's permissions (their
    own and their groups') in one statement instead of two, as plain SQL rather than ORM
    queries: every page and API request asks for both (`roles`), and building the ORM's
    queries cost more than running them (the permissions' join 0.65 ms of CPU a request,
    against some 0.15)."""

    def get_user(self, user_id: Any) -> Any:
        """`ModelBackend.get_user` (the user of every request with a login), its query a plain
        statement: the ORM's cost 0.6 ms of CPU on PostgreSQL, the statement 0.15."""
        model = get_user_model()
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {plain_sql.columns(model)} FROM {model._meta.db_table}"
                           f" WHERE {model._meta.pk.column} = %s", [model._meta.pk.to_python(user_id)])
            row = cursor.fetchone()
        if row is None:
            return None
        user = plain_sql.instance(model, connection.alias, row)
        return user if self.user_can_authenticate(user) else None

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            user_obj._perm_cache = self._all_permissions(user_obj)
        return user_obj._perm_cache

    def _all_permissions(self, user_obj: Any) -> set[str]:
        sql = (f"SELECT DISTINCT ct.app_label, p.codename FROM {Permission._meta.db_table} p"
               f" JOIN {ContentType._meta.db_table} ct ON ct.id = p.content_type_id")
        params: list[Any] = []
        if not user_obj.is_superuser:
            own, member, granted = (_columns(through) for through in (
                type(user_obj).user_permissions.through, type(user_obj).groups.through, Group.permissions.through))
            user = type(user_obj)._meta.model_name
            sql += (f" WHERE p.id IN (SELECT {own['permission']} FROM {own['table']} WHERE {own[user]} = %s)"
                    f" OR p.id IN (SELECT g.{granted['permission']} FROM {granted['table']} g JOIN {member['table']} m"
                    f" ON m.{member['group']} = g.{granted['group']} WHERE m.{member[user]} = %s)")
            params = [user_obj.pk, user_obj.pk]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {f"{app_label}.{codename}" for app_label, codename in cursor.fetchall()}


def _columns(through: Any) -> dict[str, str]:
    """A many-to-many table's name and its link columns, by the model each links to."""
    meta = through._meta
    links = {field.related_model._meta.model_name: field.column for field in meta.fields if field.is_relation}
    return {"table": meta.db_table, **links}
