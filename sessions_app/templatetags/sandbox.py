"""Template filters for sandbox app names (`agent@label`, see `sessions_app.sandbox`)."""
from __future__ import annotations

import re

from django import template

from .. import sandbox

register = template.Library()

# Eval runs name each case's sandbox `eval-<run pk>-<position>-<repeat>` (eval_app); the page links back to the run.
EVAL_LABEL = re.compile(r"^eval-(\d{1,18})(?:-\d{1,9}-\d{1,9})?$")


@register.filter
def is_sandbox(app_name: str) -> bool:
    return sandbox.is_sandbox(app_name or "")


@register.filter
def real_app_name(app_name: str) -> str:
    return sandbox.real_app_name(app_name or "")


@register.filter
def sandbox_label(app_name: str) -> str:
    return sandbox.sandbox_label(app_name or "")


@register.filter
def eval_run_pk(app_name: str) -> int | None:
    """The eval run whose sandbox `app_name` is (`trip_planner@eval-12` -> 12); None otherwise."""
    match = EVAL_LABEL.match(sandbox.sandbox_label(app_name or ""))
    return int(match.group(1)) if match else None
