"""Template filters for sandbox app names (`agent@label`, see `sessions_app.sandbox`)."""
from __future__ import annotations

from django import template

from .. import sandbox

register = template.Library()


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
    return sandbox.eval_run_pk(app_name or "")
