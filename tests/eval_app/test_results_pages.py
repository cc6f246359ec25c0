"""Pages over executed runs: live results, case details with differences, history, comparison;
and a session turned into a case that then passes against the same agent."""
from __future__ import annotations

import asyncio

import pytest
from django.urls import reverse

from runtime_app.demo import DEMO_SESSION, DEMO_USER, load_demo
from eval_app import engine, services
from eval_app.evalset_files import default_specs
from eval_app.models import EvalCase, EvalRun, EvalSet
from eval_app.selectors import run_compare
from sessions_app.models import Session

from .conftest import AGENT

# Every test runs the engine, in asgiref's worker thread on its own connection: it sees only commits.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("async_db_threads")]


def run_now(eval_set: EvalSet, **kwargs) -> EvalRun:
    run = services.eval_run_create(eval_set=eval_set, app_name=AGENT, specs=kwargs.pop("specs", default_specs()),
                                   start=False, **kwargs)
    asyncio.run(engine.execute_run(run.pk, worker="test"))
    run.refresh_from_db()
    return run


def break_case(eval_set: EvalSet) -> None:
    case = eval_set.cases.get(eval_id="weather_oslo")
    turn = case.data["conversation"][0]
    turn["intermediate_data"]["tool_uses"] = [{"name": "get_weather", "args": {"city": "Bergen"}}]
    turn["final_response"]["parts"][0]["text"] = "Bergen is rainy."
    case.save()


def test_a_failed_case_shows_expected_against_actual_with_differences(client, demo_set):
    break_case(demo_set)
    run = run_now(demo_set, eval_ids=["weather_oslo"])
    result = run.results.get()
    page = client.get(reverse("eval_app:result_detail", args=[result.pk])).content.decode()
    # Word-level differences: what only the expectation says, and what only the agent said.
    assert '<span class="d-missing">Bergen</span><span class="d-same"> is </span><span class="d-missing">rainy.' in page
    assert '<span class="d-extra">The weather in Oslo</span><span class="d-same"> is </span>' in page
    assert "call-extra" in page and "transfer_to_agent" in page  # the actual call the expectation lacks
    assert "call-changed" in page and "Bergen" in page and "Oslo" in page  # same tool, other args
    assert "FAILED" in page

    run_page = client.get(reverse("eval_app:run_detail", args=[run.pk])).content.decode()
    assert 'aria-valuenow="100"' in run_page and "1/1 (100 %)" in run_page
    assert f'id="result-{result.pk}"' in run_page


def test_history_trend_and_comparison_show_the_regression(client, demo_set):
    good = run_now(demo_set)
    break_case(demo_set)
    bad = run_now(demo_set)
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    assert "<svg" in page and "<polyline" in page and f"#{good.pk}" in page and f"#{bad.pk}" in page
    assert "5/5" in page and "4/5" in page

    compare = client.get(reverse("eval_app:run_compare"), {"a": good.pk, "b": bad.pk}).content.decode()
    assert 'id="cmp-weather_oslo"' in compare and "regressed" in compare
    # The agent did the same; the expectation changed, and the trajectories show it.
    assert "tool trajectories are identical" in compare and "run #%d" % good.pk in compare
    assert compare.index("cmp-weather_oslo") < compare.index("cmp-greeting")  # regressions first


def test_comparison_diffs_the_two_runs_tool_trajectories(demo_set):
    first, second = run_now(demo_set, eval_ids=["plan_lisbon"]), run_now(demo_set, eval_ids=["plan_lisbon"])
    # As if the agent had changed between the runs: another city, and one more call.
    row = second.results.get().invocations.get()
    row.actual_tool_calls = [{"name": "plan_trip", "args": {"city": "Porto"}}, {"name": "get_weather", "args": {"city": "Porto"}}]
    row.save()
    [comparison] = run_compare(first, second)
    assert comparison.trajectory_differs and comparison.change == "unchanged"
    [[changed, extra]] = comparison.trajectory
    assert (changed.kind, extra.kind) == ("changed", "extra")
    assert [(a.key, a.expected, a.actual, a.kind) for a in changed.args] == [("city", "Lisbon", "Porto", "changed")]


def test_a_session_becomes_a_case_with_its_real_user_and_initial_state(client):
    load_demo()
    session = Session.objects.get(session_id=DEMO_SESSION)
    url = reverse("eval_app:add_session_form", args=[session.pk])
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<form" in fragment and "<html" not in fragment and "trip_planner_evals" in fragment

    done = client.post(url, {"new_eval_set_id": "from_sessions", "eval_id": "demo"}, headers={"HX-Request": "true"})
    assert done.status_code == 200 and "Added case" in done.content.decode()
    case = EvalCase.objects.get(eval_id="demo")
    adk = case.adk()
    assert adk.session_input.user_id == DEMO_USER
    # The state it was created with, not the state the run left behind (destination, last_answer, ...).
    assert adk.session_input.state == {"user:name": "Ada", "trip_budget": 1200}
    assert [t.user_content.parts[0].text for t in adk.conversation] == [
        "Hi there!", "Please plan a trip to Lisbon", "What is the weather in Lisbon?", "And the weather in Atlantis?",
    ]
    assert [c.name for c in adk.conversation[2].intermediate_data.tool_uses] == ["transfer_to_agent", "get_weather"]

    again = client.post(url, {"eval_set": case.eval_set_id, "eval_id": "demo"}, headers={"HX-Request": "true"})
    # htmx swaps only 2xx responses: the fragment comes back with its error and a 200.
    assert again.status_code == 200 and "already has a case" in again.content.decode()
    assert '<form class="add-to-eval-set"' in again.content.decode()

    run = run_now(case.eval_set)
    assert (run.status, run.passed, run.total) == ("completed", 1, 1)
