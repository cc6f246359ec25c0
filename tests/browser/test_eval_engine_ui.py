"""The eval pages on ADK's engine, in headless chromium: a judge metric and the session
state metric chosen in the run form and run (the scripted judge, offline), the judge's
samples and the state key by key on the result page; then the judge lab's flaky badge
and the comparison's colours over stored results."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse
from google.adk.evaluation.eval_metrics import EvalMetricResult, EvalStatus
from playwright.sync_api import expect

from eval_app import judges, services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.models import EvalCaseResult, EvalRun, EvalSet
from tests.eval_app.conftest import AGENT, DEMO_FILE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RED, GREEN = "rgb(252, 232, 230)", "rgb(230, 244, 234)"  # --error-bg, --added


@pytest.fixture
def console_errors(page):
    """Console errors (a CSP violation is one), except chromium's own request for a favicon."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "favicon" not in (
        m.location or {}).get("url", "") else None)
    return errors


def demo_set() -> EvalSet:
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    eval_set = services.eval_set_import(parsed=parsed, app_name=AGENT)
    case = eval_set.cases.get(eval_id="plan_lisbon")
    # plan_trip writes destination and user:last_destination: one expectation holds, one does not.
    case.data["final_session_state"] = {"destination": "Lisbon", "user:last_destination": "Porto"}
    case.save()
    return eval_set


def test_a_judge_metric_and_the_state_metric_chosen_in_the_form_run_and_show_their_details(
        live_server, page, console_errors):
    eval_set = demo_set()
    page.goto(live_server.url + reverse("eval_app:eval_set_detail", args=[eval_set.pk]))
    # ADK's defaults are ticked; this run asks for a judge metric and the state metric instead.
    page.click("#metric-choice > summary")  # the metrics' options are folded away
    page.uncheck("input[name=tool_trajectory_avg_score__on]")
    page.uncheck("input[name=response_match_score__on]")
    page.check("input[name=final_response_match_v2__on]")
    page.fill("input[name=final_response_match_v2__num_samples]", "2")
    page.check("input[name=final_session_state_match__on]")
    page.fill("input[name=judge_model]", judges.SCRIPTED_JUDGE)
    page.check("input[name=scope][value=selected]")
    page.check("input[aria-label='select plan_lisbon']")
    with page.expect_navigation(url=re.compile(r"/evals/runs/\d+/$")):
        page.click("#run-button")
    expect(page.locator("#run-status")).to_have_text("completed", timeout=60_000)
    run = EvalRun.objects.get()
    assert sorted(run.metric_names) == ["final_response_match_v2", "final_session_state_match"]
    header = page.locator("table.results thead").text_content()
    assert "final_response_match_v2" in header and "tool_call_count_v1" in header

    page.locator("#case-results tr").first.locator("text=details").click()
    page.wait_for_url(re.compile(r"/evals/results/\d+/$"))
    # The state metric, key by key: what the case expects against what the session ended with.
    keys = page.locator("tr.state-key")
    expect(keys).to_have_count(2)
    destination = page.locator("tr.state-key[data-key='destination']")
    expect(destination).to_contain_text("equal")
    last = page.locator("tr.state-key[data-key='user:last_destination']")
    expect(last).to_contain_text("differs")
    expect(last).to_contain_text('actual "Lisbon"')
    expect(page.locator("tr.metric-result[data-metric='final_session_state_match']")).to_contain_text("FAILED")
    # The judge's samples: two per invocation, each with its verdict and rationale.
    group = page.locator(".judge-group[data-metric='final_response_match_v2']")
    expect(group).to_contain_text("2 samples")
    expect(group.locator("details.judge-sample")).to_have_count(2)
    group.locator("details.judge-sample summary").first.click()
    expect(group.locator("tr.verdict").first).to_be_visible()
    # Informational metrics are there for every run; the session's timeline is one click away.
    expect(page.locator("tr.metric-result[data-metric='inference_call_count_v1']")).to_contain_text("INFORMATIONAL")
    page.click("#session-link")
    page.wait_for_url(re.compile(r"/sessions/\d+/$"))
    assert page.js_errors == [] and console_errors == []


def stored(run: EvalRun, eval_id: str, status: str, score: float, repeat: int = 0, case_data: dict | None = None):
    case = run.eval_set.cases.get(eval_id=eval_id)
    result = EvalMetricResult(metric_name="response_match_score", threshold=0.5, criterion={"threshold": 0.5},
                              score=score, eval_status=EvalStatus.PASSED if status == "passed" else EvalStatus.FAILED)
    EvalCaseResult.objects.create(run=run, case=case, eval_id=eval_id, repeat=repeat, position=case.position,
                                  status=status, metrics=[result.model_dump(mode="json")],
                                  case_data=case_data or case.data)


def test_the_judge_labs_flaky_badge_and_the_comparisons_colours(live_server, page, console_errors):
    eval_set = demo_set()
    metrics = [{"metric_name": "response_match_score", "threshold": 0.5, "criterion": {"threshold": 0.5}}]

    def run(repeats: int) -> EvalRun:
        return EvalRun.objects.create(eval_set=eval_set, app_name=AGENT, metrics=metrics, repeats=repeats,
                                      eval_ids=["greeting", "plan_lisbon"], status="completed", total=2 * repeats)

    repeated, before, after = run(3), run(1), run(1)
    for repeat, (status, score) in enumerate([("passed", 0.9), ("failed", 0.3), ("passed", 0.8)]):
        stored(repeated, "greeting", status, score, repeat)
    for repeat in range(3):
        stored(repeated, "plan_lisbon", "failed", 0.2, repeat)
    stored(before, "greeting", "passed", 0.9)
    stored(before, "plan_lisbon", "failed", 0.2)
    edited = {**eval_set.cases.get(eval_id="greeting").data, "final_session_state": {"destination": "Oslo"}}
    stored(after, "greeting", "failed", 0.1, case_data=edited)
    stored(after, "plan_lisbon", "passed", 0.7)

    page.goto(live_server.url + reverse("eval_app:run_detail", args=[repeated.pk]))
    lab = page.locator("#judge-lab")
    expect(lab).to_contain_text("passed at least once in its k repeats")
    greeting = lab.locator("tr[data-case='greeting']")
    expect(greeting.locator(".badge.flaky")).to_have_text("flaky")
    expect(greeting.locator(".pass-rate")).to_have_text("2/3 (67 %)")
    expect(lab.locator("tr[data-case='plan_lisbon'] .badge.flaky")).to_have_count(0)

    page.goto(live_server.url + reverse("eval_app:run_compare") + f"?a={before.pk}&b={after.pk}")
    regressed, improved = page.locator("#cmp-greeting"), page.locator("#cmp-plan_lisbon")
    assert regressed.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor") == RED
    assert improved.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor") == GREEN
    expect(regressed.locator(".badge.edited")).to_have_text("expectations edited")
    expect(regressed).to_contain_text("final_session_state")
    expect(improved.locator(".badge.edited")).to_have_count(0)
    down = regressed.locator("td.score-cell").first.evaluate("td => getComputedStyle(td).color")
    up = improved.locator("td.score-cell").first.evaluate("td => getComputedStyle(td).color")
    assert down == "rgb(197, 34, 31)" and up == "rgb(11, 128, 67)"  # --error, --user
    assert page.js_errors == [] and console_errors == []
