"""Template filters for showing agent data safely."""
from __future__ import annotations

import datetime
import json
from typing import Any

import markdown as md
import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

FOLD_AT = 400


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown to HTML, then sanitised: agent text may contain any HTML,
    and none of it may run (no scripts, handlers or javascript: URLs)."""
    html = md.markdown(text or "", extensions=["fenced_code", "tables", "sane_lists"])
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer nofollow"))  # noqa: S308 (sanitised above)


@register.filter
def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def compact(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


@register.filter
def is_long(value: Any) -> bool:
    return len(pretty(value)) > FOLD_AT


@register.filter
def preview(value: Any, size: int = 120) -> str:
    text = compact(value)
    return text if len(text) <= size else text[: size - 1] + "…"


def utc_datetime(value: Any) -> datetime.datetime | None:
    """A stored float timestamp as an aware datetime; None when it is no time a
    datetime can hold (a value stored before it was checked must not break a page)."""
    try:
        return datetime.datetime.fromtimestamp(float(value), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


@register.filter
def unix_time(value: float | None) -> str:
    if value is None:
        return ""
    when = utc_datetime(value)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC" if when else f"{value!r} (not a valid time)"


@register.filter
def short_time(value: float | None) -> str:
    if value is None:
        return ""
    when = utc_datetime(value)
    return when.strftime("%H:%M:%S.%f")[:-3] if when else "?"


@register.filter
def scope_prefix(scope: str) -> str:
    return {"app": "app:", "user": "user:"}.get(scope, "")
