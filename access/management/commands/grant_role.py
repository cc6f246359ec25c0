"""`manage.py grant_role <username> <viewer|editor|admin|none>`: put a user in one role group."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from access.roles import ADMIN, EDITOR, VIEWER

ROLES = (VIEWER, EDITOR, ADMIN)


class Command(BaseCommand):
    help = "Make a user a viewer, editor or admin (or 'none': no role). Admins also get staff status, for Django's admin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", choices=[*ROLES, "none"])

    @transaction.atomic
    def handle(self, *args: Any, username: str, role: str, **options: Any) -> None:
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None
        user.groups.remove(*Group.objects.filter(name__in=ROLES))
        if role != "none":
            user.groups.add(Group.objects.get(name=role))
        # Django's admin lets in staff only; a superuser keeps what it has.
        if not user.is_superuser:
            user.is_staff = role == ADMIN
            user.save(update_fields=["is_staff"])
        self.stdout.write(f"{username}: role {role}{' (staff)' if user.is_staff else ''}.")
