"""The eval REST API: list sets, start a run, read its progress and results."""
from __future__ import annotations

import pytest

from eval_app.models import EvalRun

from .conftest import AGENT

pytestmark = pytest.mark.django_db


def test_it_lists_sets_and_starts_a_run_with_test_config_criteria(client, demo_set):
    [listed] = client.get("/api/evals/sets").json()
    assert (listed["eval_set_id"], listed["case_count"]) == ("trip_planner_demo", 5)

    response = client.post(f"/api/evals/sets/{demo_set.pk}/runs", {
        "eval_ids": ["greeting"], "repeats": 2,
        "criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"}},
    }, content_type="application/json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["app_name"], body["total"], body["status"]) == (AGENT, 2, "queued")
    assert body["metrics"] == [{"metric_name": "tool_trajectory_avg_score", "threshold": 0.5,
                                "match_type": "IN_ORDER", "ignore_args": False}]
    detail = client.get(f"/api/evals/runs/{body['id']}").json()
    assert detail["percent"] == 0 and detail["results"] == []


def test_it_refuses_unknown_metrics_and_agents(client, demo_set):
    bad = client.post(f"/api/evals/sets/{demo_set.pk}/runs", {"criteria": {"safety_v1": 0.5}},
                      content_type="application/json")
    assert bad.status_code == 400 and "safety_v1" in bad.json()["criteria"][0]
    bad = client.post(f"/api/evals/sets/{demo_set.pk}/runs", {"app_name": "nope"}, content_type="application/json")
    assert bad.status_code == 400 and not EvalRun.objects.exists()
