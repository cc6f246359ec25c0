"""Filters for the memory app's templates. Their output is still autoescaped."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


@register.filter
def unixtime(value: float | None) -> datetime | None:
    """A stored float timestamp (ADK's form) as an aware datetime, for `|date`."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):  # a page must render any stored value
        return None
