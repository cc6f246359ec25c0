"""The viewer, editor and admin groups (see access/roles.py).

Written out here rather than imported, so this migration keeps doing what it
did when the roles change later (a later migration changes them).
"""
from __future__ import annotations

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

ADKUI = [("access", "view"), ("access", "edit"), ("access", "delete")]
# User management in Django's admin: accounts, their API tokens, and unlocking
# an account django-axes locked (deleting its failed attempts).
USERS = [
    *[("auth", f"{action}_user") for action in ("add", "change", "delete", "view")],
    ("auth", "view_group"),
    *[("authtoken", f"{action}_{model}") for model in ("token", "tokenproxy") for action in ("add", "change", "delete", "view")],
    ("axes", "view_accessattempt"),
    ("axes", "delete_accessattempt"),
]
ROLES = {
    "viewer": ADKUI[:1],
    "editor": ADKUI[:2],
    "admin": ADKUI + USERS,
}


def create_roles(apps, schema_editor) -> None:
    # Django creates permissions after the last migration (post_migrate); the
    # groups need them now.
    using = schema_editor.connection.alias
    for label in {app for app, _ in ADKUI + USERS}:
        create_permissions(global_apps.get_app_config(label), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in ROLES.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        for app_label, codename in perms:
            group.permissions.add(
                Permission.objects.using(using).get(content_type__app_label=app_label, codename=codename)
            )


def delete_roles(apps, schema_editor) -> None:
    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        ("axes", "0010_accessattemptexpiration"),
    ]

    operations = [migrations.RunPython(create_roles, delete_roles)]
