"""Filters for showing recorded numbers: durations, token counts, sizes."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(ms: float | None) -> str:
    if ms is None:
        return "unfinished"
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


@register.filter
def tokens(count: int | None) -> str:
    return "–" if count is None else f"{count:,}"


@register.filter
def pct(value: float) -> str:
    """A CSS percentage, never localised (a decimal comma would break the style)."""
    return f"{float(value):.2f}%"
