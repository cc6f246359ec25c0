"""The permissions behind adkui's roles (see `roles`).

Django keeps permissions per model, so a model with no table holds them:
`access.view`, `access.edit`, `access.delete`. Migration 0002 puts them in
the viewer, editor and admin groups.
"""
from __future__ import annotations

from django.db import models


class Access(models.Model):
    class Meta:
        managed = False  # no table: only its permissions (and their content type) are stored
        default_permissions = ()
        permissions = [
            ("view", "See sessions, events, state, artifacts, memory and evals"),
            ("edit", "Chat, run agents and evals, create and change sessions, state, events, artifacts, memory, eval sets and cases"),
            ("delete", "Delete sessions, artifacts, memories, eval sets and eval cases"),
        ]
        verbose_name = "adkui access"
