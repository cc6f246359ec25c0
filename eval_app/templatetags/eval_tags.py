"""Small template helpers for eval pages."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import template

from lazy_imports import on_first_use
from sessions_app.templatetags.adkui import breakable

if TYPE_CHECKING:
    from eval_app import metrics, selectors
else:
    # Imported when a filter first needs them (lazy_imports.py): they import ADK's evaluation
    # engine (seconds), and Django imports every tag library in every process that checks or renders.
    metrics = on_first_use("eval_app.metrics")
    selectors = on_first_use("eval_app.selectors")

register = template.Library()
register.filter("breakable", breakable)  # the session pages' filter: long metric names wrap at "_"


@register.filter
def metric(result: Any, name: str) -> dict[str, Any] | None:
    """The named metric's entry of a case result (or of a list of metric dicts)."""
    entries = result if isinstance(result, list) else result.metrics
    return next((m for m in entries if isinstance(m, dict) and m.get("metric_name") == name), None)


@register.filter
def metric_status(entry: dict[str, Any] | None) -> str:
    """A metric result's verdict as ADK names it (its EvalStatus)."""
    return selectors.status_name(entry) if isinstance(entry, dict) else ""


@register.filter
def table_metrics(run: Any) -> list[str]:
    """The columns of a run's results: the metrics it asked for, then the informational ones."""
    return list(dict.fromkeys([*run.metric_names, *metrics.INFORMATIONAL]))


@register.filter
def criterion_summary(entry: dict[str, Any]) -> str:
    """A run's metric as it asked for it: match type, ignore args, judge, samples, rubric count."""
    if not isinstance(entry, dict):
        return ""
    criterion = entry.get("criterion") if isinstance(entry.get("criterion"), dict) else {}
    parts = []
    match_type = criterion.get("match_type")
    if match_type is not None and match_type not in (0, "EXACT"):
        name = metrics.MATCH_TYPE_NAMES.get(match_type, match_type) if isinstance(match_type, int) else match_type
        parts.append(str(name))
    if criterion.get("ignore_args"):
        parts.append("ignore args")
    judge = criterion.get("judge_model_options") or {}
    if isinstance(judge, dict) and judge.get("judge_model"):
        parts.append(f"judge {judge['judge_model']} × {judge.get('num_samples', 1)}")
    if criterion.get("rubrics"):
        parts.append(f"{len(criterion['rubrics'])} rubric{'s' if len(criterion['rubrics']) != 1 else ''}")
    return " · ".join(parts)


@register.filter
def threshold_of(entry: dict[str, Any]) -> Any:
    if not isinstance(entry, dict):
        return None
    criterion = entry.get("criterion")
    if isinstance(criterion, dict) and criterion.get("threshold") is not None:
        return criterion["threshold"]
    return entry.get("threshold")


@register.filter
def rubric_scores(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The rubric scores of a per-invocation metric result (not the state metric's keys, shown per case)."""
    if not isinstance(entry, dict) or entry.get("metric_name") == "final_session_state_match":
        return []
    details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
    return [r for r in details.get("rubric_scores") or [] if isinstance(r, dict)]


@register.filter
def verdict_class(verdict: Any) -> str:
    """A judge's verdict word (yes/no, valid/invalid, true/false) as pass/fail colours."""
    word = str(verdict or "").strip().lower()
    return "pass" if word in ("yes", "valid", "true", "supported") else "fail" if word else "muted"


@register.filter
def metric_trend(row: Any, name: str) -> str:
    return row.trend(name)


@register.filter
def percent(value: float | None) -> str:
    return "–" if value is None else f"{round(100 * value)} %"


@register.filter
def score(value: float | None) -> str:
    """0.0, 0.5, 0.667, 1.0: three decimals at most, one at least."""
    if value is None:
        return "–"
    if not isinstance(value, (int, float)):
        return str(value)
    text = f"{value:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


@register.filter
def status_class(status: str | None) -> str:
    return {"passed": "pass", "failed": "fail", "error": "fail"}.get(str(status or "").lower(), "muted")


@register.filter
def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.filter
def session_url(session_pk: int | None) -> str:
    return selectors.session_url(session_pk)


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
