"""Small template helpers for eval pages."""
from __future__ import annotations

import json
from typing import Any

from django import template

from eval_app.selectors import session_url as _session_url

register = template.Library()


@register.filter
def metric(result: Any, name: str) -> dict[str, Any] | None:
    """The named metric's entry of a case result (or of a list of metric dicts)."""
    entries = result if isinstance(result, list) else result.metrics
    return next((m for m in entries if m.get("metric_name") == name), None)


@register.filter
def score(value: float | None) -> str:
    """0.0, 0.5, 0.667, 1.0: three decimals at most, one at least."""
    if value is None:
        return "–"
    text = f"{value:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


@register.filter
def status_class(status: str | None) -> str:
    return {"passed": "pass", "failed": "fail", "error": "fail"}.get((status or "").lower(), "muted")


@register.filter
def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.filter
def session_url(session_pk: int | None) -> str:
    return _session_url(session_pk)


@register.filter
def delta(value: float | None) -> str:
    if value is None:
        return ""
    return "±0" if abs(value) < 1e-9 else f"{value:+.3f}"


@register.filter
def metric_score(scores: dict[str, float | None], name: str) -> float | None:
    return scores.get(name)


@register.filter
def metric_delta(row: Any, name: str) -> float | None:
    return row.delta(name)
