"""Health signals as people read them: units, and "—" where a figure is unknown (never 0)."""
from __future__ import annotations

from django import template

register = template.Library()

UNKNOWN = "—"


@register.filter
def usd(value: float | None) -> str:
    """Dev sessions cost cents: four decimals below a dollar."""
    if value is None:
        return UNKNOWN
    if 0 < value < 0.0001:
        return "< $0.0001"
    if value < 1:
        return f"${value:.4f}"
    return f"${value:,.2f}"


@register.filter
def ms(value: float | None) -> str:
    if value is None:
        return UNKNOWN
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.2f} s"


@register.filter
def token_count(value: int | None) -> str:
    """1234 → 1.2k: a column of sessions compares orders of magnitude."""
    if value is None:
        return UNKNOWN
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


@register.filter
def per_turn(count: int, turns: int) -> str:
    if not turns:
        return UNKNOWN
    return f"{count / turns:.2f}"
