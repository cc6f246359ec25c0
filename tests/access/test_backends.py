"""`RoleBackend`: Django's model backend with a user's permissions read in one query."""
from __future__ import annotations

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from access.backends import RoleBackend

pytestmark = pytest.mark.django_db


def _perm(codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label="access", codename=codename)


def _fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)  # no permission cache from an earlier check


@pytest.fixture
def users() -> dict[str, User]:
    viewers, editors = Group.objects.get(name="viewer"), Group.objects.get(name="editor")
    made = {
        "none": User.objects.create_user("none"),
        "direct": User.objects.create_user("direct"),
        "group": User.objects.create_user("group"),
        "both": User.objects.create_user("both"),
        "two groups": User.objects.create_user("two-groups"),
        "superuser": User.objects.create_superuser("root"),
        "inactive": User.objects.create_user("inactive", is_active=False),
    }
    made["direct"].user_permissions.add(_perm("delete"))
    made["group"].groups.add(viewers)
    made["both"].groups.add(editors)
    made["both"].user_permissions.add(_perm("delete"), _perm("view"))
    made["two groups"].groups.add(viewers, editors)
    made["inactive"].groups.add(editors)
    return made


def test_every_user_gets_the_permissions_djangos_model_backend_gives(users: dict[str, User]) -> None:
    for name, user in users.items():
        ours = RoleBackend().get_all_permissions(_fresh(user))
        djangos = ModelBackend().get_all_permissions(_fresh(user))
        assert ours == djangos, name
    assert RoleBackend().get_all_permissions(_fresh(users["both"])) >= {"access.view", "access.edit", "access.delete"}
    assert RoleBackend().get_all_permissions(_fresh(users["none"])) == set()


def test_a_permission_check_reads_once_per_request_in_one_query(users: dict[str, User]) -> None:
    user = _fresh(users["two groups"])
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("access.view")
        assert user.has_perm("access.edit")
        assert not user.has_perm("access.delete")
    assert len(queries) == 1


def test_a_removed_role_is_gone_at_the_next_request(users: dict[str, User]) -> None:
    user = users["group"]
    assert _fresh(user).has_perm("access.view")
    user.groups.clear()
    assert not _fresh(user).has_perm("access.view")


def test_a_requests_user_is_the_one_djangos_model_backend_gives(users: dict[str, User]) -> None:
    """`RoleBackend.get_user` reads the user in a plain statement (`plain_sql`): every column as
    the ORM converts it (aware datetimes, booleans), the inactive refused, an unknown id None."""
    user = users["both"]
    User.objects.filter(pk=user.pk).update(last_login=timezone.now(), first_name="Zoë")
    names = [field.attname for field in User._meta.concrete_fields]
    for name, one in users.items():
        ours, djangos = RoleBackend().get_user(one.pk), ModelBackend().get_user(one.pk)
        if djangos is None:
            assert ours is None, name
            continue
        assert [(getattr(ours, n), type(getattr(ours, n))) for n in names] == [
            (getattr(djangos, n), type(getattr(djangos, n))) for n in names], name
        assert not ours._state.adding and ours._state.db == "default"
    assert RoleBackend().get_user(users["inactive"].pk) is None
    assert RoleBackend().get_user(max(u.pk for u in users.values()) + 1) is None
    assert timezone.is_aware(RoleBackend().get_user(user.pk).last_login)


def test_a_logged_in_page_reads_its_user_through_the_plain_statement(client, users: dict[str, User]) -> None:
    client.force_login(users["both"])
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    assert any(q["sql"].startswith("SELECT id, password, last_login") for q in queries)
