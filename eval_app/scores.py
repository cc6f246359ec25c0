"""Mean score per metric of runs' results: what a set's history shows for each run.

A finished run keeps its means (`EvalRun.metric_means`, stored as it ends), so
a history page reads one row a run instead of every result of every run it
shows (20 000 results for a run of 10 000 cases and two repeats).
"""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from .models import EvalCaseResult


def is_score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def metric_means(run_pks: list[int]) -> dict[int, dict[str, float]]:
    """Each run's mean score per metric over its results (metrics without a score left out): one query."""
    scores: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run_pk, case_metrics in EvalCaseResult.objects.filter(run_id__in=run_pks).values_list("run_id", "metrics"):
        for m in case_metrics:
            if is_score(m.get("score")):
                scores[run_pk][m["metric_name"]].append(m["score"])
    return {run_pk: {name: mean(values) for name, values in by_name.items()} for run_pk, by_name in scores.items()}
