"""Pages over stored results, made by hand in the shapes ADK's engine stores: the case
result page (ADK's metric results, rubric scores, per-key state results, judge samples,
simulated user turns, informational metrics, the session link), the judge lab of a
repeated run, and the comparison of two runs (edited expectations, colours)."""
from __future__ import annotations

import copy
import html
import re
from types import SimpleNamespace

import pytest
from django.urls import reverse
from google.adk.evaluation.eval_metrics import (
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalStatus,
    TokenUsageDetails,
)
from google.adk.evaluation.eval_rubrics import RubricScore

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from eval_app import progress, selectors
from eval_app.models import EvalCase, EvalCaseResult, EvalInvocationResult, EvalRun, EvalSet, EvalWorkItem
from runtime_app.demo import DEMO_SESSION, DEMO_USER, load_demo
from sessions_app.models import App, Session

from .conftest import AGENT

pytestmark = pytest.mark.django_db

PASSED, FAILED, INFO = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.INFORMATIONAL


def metric(name: str, score: float | None, status: EvalStatus, *, threshold: float | None = None,
           rubric_scores: list[RubricScore] | None = None, criterion: dict | None = None, **details) -> dict:
    """One overall metric result, as ADK's EvalMetricResult JSON."""
    if criterion is None and threshold is not None:
        criterion = {"threshold": threshold}
    return EvalMetricResult(
        metric_name=name, threshold=threshold, criterion=criterion, score=score, eval_status=status,
        details=EvalMetricResultDetails(rubric_scores=rubric_scores, **details),
    ).model_dump(mode="json")


def informational(tool_calls: float = 1.0) -> list[dict]:
    return [
        metric("tool_call_count_v1", tool_calls, INFO),
        metric("inference_call_count_v1", 2.0, INFO),
        metric("token_usage_v1", 120.0, INFO, token_usage_details=TokenUsageDetails(total_tokens=120, input_tokens=100,
                                                                                     output_tokens=20)),
        metric("invocation_duration_v1", 0.25, INFO),
    ]


def make_run(eval_set: EvalSet, *, metrics: list[dict], repeats: int = 1, judge_model: str = "") -> EvalRun:
    eval_ids = list(eval_set.cases.values_list("eval_id", flat=True))
    return EvalRun.objects.create(
        eval_set=eval_set, app_name=AGENT, metrics=metrics, eval_ids=eval_ids, repeats=repeats, status="completed",
        total=len(eval_ids) * repeats, judge_model=judge_model,
    )


def add_result(run: EvalRun, eval_id: str, *, status: str, metrics: list[dict], repeat: int = 0,
               case_data: dict | None = None, **fields) -> EvalCaseResult:
    case = run.eval_set.cases.filter(eval_id=eval_id).first()
    data = case_data if case_data is not None else (copy.deepcopy(case.data) if case else {"eval_id": eval_id})
    return EvalCaseResult.objects.create(
        run=run, case=case, eval_id=eval_id, repeat=repeat, position=case.position if case else 0, status=status,
        metrics=metrics, case_data=data, **fields,
    )


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


# ---- the case result page ---------------------------------------------------


def test_the_result_page_shows_adks_metrics_rubric_by_rubric_and_the_state_key_by_key(client, demo_set):
    rubrics = [{"rubric_id": "concise", "rubric_content": {"text_property": "The answer is short."}},
               {"rubric_id": "polite", "rubric_content": {"text_property": "The answer greets the user."}}]
    run = make_run(demo_set, metrics=[
        {"metric_name": "rubric_based_final_response_quality_v1", "threshold": 0.5,
         "criterion": {"threshold": 0.5, "rubrics": rubrics}},
        {"metric_name": "final_session_state_match", "threshold": 1.0, "criterion": {"threshold": 1.0}},
    ], judge_model="adkui-scripted-judge")
    case_data = copy.deepcopy(demo_set.cases.get(eval_id="greeting").data)
    case_data["final_session_state"] = {"destination": "Lisbon", "user:name": "Ada", "app:visits": 3}
    app = App.objects.create(name=f"{AGENT}@eval-{run.pk}")
    session = Session.objects.create(app=app, user_id="eval_user", session_id="s-1", create_time=0, update_time=0)
    result = add_result(run, "greeting", status="failed", case_data=case_data, session=session,
                        adk_session_id="s-1", user_id="eval_user", metrics=[
        metric("rubric_based_final_response_quality_v1", 0.5, PASSED, threshold=0.5,
               criterion={"threshold": 0.5, "rubrics": rubrics},
               rubric_scores=[RubricScore(rubric_id="concise", score=1.0, rationale="Seven words."),
                              RubricScore(rubric_id="polite", score=0.0, rationale="No greeting <b>at all</b>.")]),
        metric("final_session_state_match", 2 / 3, FAILED, threshold=1.0, rubric_scores=[
            RubricScore(rubric_id="destination", score=1.0, rationale='expected "Lisbon" / actual "Lisbon"'),
            RubricScore(rubric_id="user:name", score=0.0, rationale='expected "Ada" / actual "Bob"'),
            RubricScore(rubric_id="app:visits", score=1.0, rationale="expected 3 / actual 3"),
        ]),
        *informational(tool_calls=4.0),
    ])
    page = client.get(reverse("eval_app:result_detail", args=[result.pk])).content.decode()
    text = text_of(page)
    # Each metric with ADK's status, score and threshold.
    assert "rubric_based_final_response_quality_v1 0.5 ≥ 0.5 PASSED" in text
    assert "final_session_state_match 0.667 ≥ 1.0 FAILED" in text
    # Rubric by rubric, with the rubric's text from the criterion and the judge's rationale (escaped).
    assert "concise The answer is short. 1.0 Seven words." in text
    assert "polite The answer greets the user. 0.0" in text and "No greeting &lt;b&gt;at all&lt;/b&gt;." in page
    # The state metric key by key: expected value, verdict, expected against actual.
    assert 'user:name "Ada" differs expected "Ada" / actual "Bob"' in text
    assert 'destination "Lisbon" equal' in text and "app:visits 3 equal" in text
    assert page.count('class="state-key key-differs"') == 1
    # Informational metrics, with their breakdown, but no pass/fail of theirs.
    assert "tool_call_count_v1 4.0 – INFORMATIONAL" in text
    assert "total_tokens 120.0" in text and "output_tokens 20.0" in text
    # The session's timeline, through the result's session.
    assert f'href="{reverse("runtime:session_detail", args=[session.pk])}" id="session-link"' in page
    assert "judge adkui-scripted-judge" in text


def test_judge_samples_show_each_verdict_and_warn_when_adk_dropped_one(client, demo_set):
    run = make_run(demo_set, metrics=[{"metric_name": "rubric_based_final_response_quality_v1", "threshold": 0.5}])
    samples = [
        {"metric_name": "rubric_based_final_response_quality_v1", "invocation_index": 0, "sample": 0, "raw": "raw one",
         "verdicts": [{"rubric_id": "concise", "property": "The answer is short.", "verdict": "yes",
                       "rationale": "It is short."}], "dropped": []},
        {"metric_name": "rubric_based_final_response_quality_v1", "invocation_index": 0, "sample": 1, "raw": "raw two",
         "verdicts": [{"rubric_id": "concise", "property": "The answer is short.", "verdict": "no",
                       "rationale": "It rambles."}],
         "dropped": [{"property": "The answer is in French.", "verdict": "yes", "rationale": "Not a rubric."}]},
    ]
    result = add_result(run, "greeting", status="passed", judge_samples=samples,
                        metrics=[metric("rubric_based_final_response_quality_v1", 0.5, PASSED, threshold=0.5)])
    page = client.get(reverse("eval_app:result_detail", args=[result.pk])).content.decode()
    text = text_of(page)
    assert "Judge samples" in text and "turn 1 · 2 samples" in text
    assert "concise The answer is short. yes It is short." in text
    assert "concise The answer is short. no It rambles." in text
    assert "The judge gave 1 verdict that matched no rubric; ADK dropped it from the score." in text
    assert "dropped The answer is in French. yes Not a rubric." in text
    assert "raw two" in text

    clean = add_result(run, "plan_lisbon", status="passed", judge_samples=samples[:1],
                       metrics=[metric("rubric_based_final_response_quality_v1", 1.0, PASSED, threshold=0.5)])
    page = client.get(reverse("eval_app:result_detail", args=[clean.pk])).content.decode()
    assert "It is short." in page and "dropped-warning" not in page


def test_a_scenario_cases_user_turns_are_marked_simulated(client, demo_set):
    run = make_run(demo_set, metrics=[{"metric_name": "final_response_match_v2", "threshold": 0.5}])
    scenario = {"eval_id": "chat", "conversation_scenario": {
        "starting_prompt": "Hi, I want a trip.", "conversation_plan": "Ask for Lisbon, then ask about the weather."}}
    result = add_result(run, "chat", status="passed", case_data=scenario, metrics=informational())
    per_turn = [metric("rubric_based_final_response_quality_v1", 1.0, PASSED, threshold=0.5, rubric_scores=[
        RubricScore(rubric_id="asks", score=1.0, rationale="It asks where to go.")])]
    for index, (user, answer) in enumerate([("Hi, I want a trip.", "Where to?"), ("Lisbon please", "Planned.")]):
        EvalInvocationResult.objects.create(case_result=result, index=index, user_text=user, actual={},
                                            actual_response=answer, metrics=per_turn if index == 0 else [])
    page = client.get(reverse("eval_app:result_detail", args=[result.pk])).content.decode()
    text = text_of(page)
    assert "Conversation scenario" in text and "Ask for Lisbon, then ask about the weather." in text
    assert "user simulated Hi, I want a trip." in text and "user simulated Lisbon please" in text
    assert "Expected response" not in text and "Planned." in text
    # The judge's rubric verdicts of each turn, with the judge's own rationale.
    assert page.count('class="calls rubrics turn-rubrics"') == 1 and "asks 1.0 It asks where to go." in text

    # A case with a conversation of its own has no simulated turns.
    plain = add_result(run, "greeting", status="passed", metrics=informational())
    EvalInvocationResult.objects.create(case_result=plain, index=0, user_text="Hi there!", actual={},
                                        actual_response="Hello!")
    page = client.get(reverse("eval_app:result_detail", args=[plain.pk])).content.decode()
    assert "simulated" not in text_of(page) and "Expected response" in page


def test_the_run_page_shows_adk_statuses_and_the_informational_metrics_of_every_run(client, demo_set):
    run = make_run(demo_set, metrics=[{"metric_name": "response_match_score", "threshold": 0.8,
                                       "criterion": {"threshold": 0.8}}])
    add_result(run, "greeting", status="passed", metrics=[metric("response_match_score", 0.9, PASSED, threshold=0.8),
                                                          *informational(tool_calls=3.0)])
    page = client.get(reverse("eval_app:run_detail", args=[run.pk])).content.decode()
    header = page[page.index("<thead>"):page.index("</thead>")]
    for name in ("response_match_score", "tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                 "invocation_duration_v1"):
        assert f'<th class="metric-name" title="{name}">{name.replace("_", "_<wbr>")}</th>' in header
    cells = [text_of(c).strip() for c in re.findall(r'<td class="metric-cell">(.*?)</td>', page, re.S)]
    assert cells == ["0.9 PASSED", "3.0", "2.0", "120.0", "0.25"]
    assert "Judge lab" not in page  # one repeat: nothing to compare


# ---- judge lab --------------------------------------------------------------


def test_judge_lab_numbers_on_a_repeated_run(client, demo_set):
    run = make_run(demo_set, metrics=[{"metric_name": "response_match_score", "threshold": 0.5}], repeats=4)
    for repeat, (status, score) in enumerate([("passed", 1.0), ("failed", 0.2), ("passed", 0.6), ("error", None)]):
        metrics = [metric("response_match_score", score, PASSED if status == "passed" else FAILED, threshold=0.5)]
        add_result(run, "greeting", status=status, repeat=repeat, metrics=metrics if score is not None else [])
    for repeat in range(4):
        add_result(run, "plan_lisbon", status="failed", repeat=repeat,
                   metrics=[metric("response_match_score", 0.4, FAILED, threshold=0.5)])
    for repeat in range(4):
        add_result(run, "weather_oslo", status="passed", repeat=repeat,
                   metrics=[metric("response_match_score", 0.9, PASSED, threshold=0.5)])

    greeting, lisbon, oslo = selectors.judge_lab_page(run, size=3).rows
    assert (greeting.eval_id, greeting.runs, greeting.passed, greeting.pass_rate) == ("greeting", 4, 2, 0.5)
    assert greeting.pass_at_k and greeting.flaky
    [spread] = greeting.spreads
    assert (spread.metric_name, spread.count, spread.low, spread.high) == ("response_match_score", 3, 0.2, 1.0)
    assert spread.stdev == pytest.approx(0.3265986)  # population stdev of 1.0, 0.2, 0.6
    assert (lisbon.pass_rate, lisbon.pass_at_k, lisbon.flaky) == (0.0, False, False)
    assert lisbon.spreads[0].stdev == 0.0
    assert (oslo.pass_rate, oslo.pass_at_k, oslo.flaky) == (1.0, True, False)

    page = client.get(reverse("eval_app:run_detail", args=[run.pk])).content.decode()
    lab = text_of(page[page.index('id="judge-lab"'):])
    assert "pass@k (k = 4): the case passed at least once in its k repeats" in lab
    assert "greeting 4/4 2/4 (50 %) yes flaky response_match_score 0.2–1.0, σ 0.327" in lab
    assert "plan_lisbon 4/4 0/4 (0 %) no response_match_score 0.4–0.4, σ 0.0" in lab
    assert page.count('class="badge flaky"') == 1


# ---- comparing two runs -----------------------------------------------------


def test_comparison_flags_edited_expectations_and_colours_regressions_and_improvements(client, demo_set):
    metrics = [{"metric_name": "response_match_score", "threshold": 0.5}]
    before, after = make_run(demo_set, metrics=metrics), make_run(demo_set, metrics=metrics)

    def results(run, rows):
        for eval_id, status, score, data in rows:
            add_result(run, eval_id, status=status, case_data=data, metrics=[
                metric("response_match_score", score, PASSED if status == "passed" else FAILED, threshold=0.5),
                *informational(tool_calls=score * 10)])

    greeting = demo_set.cases.get(eval_id="greeting").data
    edited = copy.deepcopy(greeting)
    edited["conversation"][0]["final_response"]["parts"][0]["text"] = "Hi! Where to?"
    with_state = {**copy.deepcopy(demo_set.cases.get(eval_id="plan_lisbon").data), "final_session_state": {"a": 1}}
    results(before, [("greeting", "passed", 0.9, greeting), ("plan_lisbon", "failed", 0.3, None),
                     ("weather_oslo", "passed", 0.8, None)])
    results(after, [("greeting", "failed", 0.2, edited), ("plan_lisbon", "passed", 0.7, with_state),
                    ("weather_oslo", "passed", 0.8, None)])

    rows = {row.eval_id: row for row in selectors.run_compare_page(before, after, size=50).rows}
    assert (rows["greeting"].change, rows["greeting"].edited) == ("regressed", ["conversation"])
    assert (rows["plan_lisbon"].change, rows["plan_lisbon"].edited) == ("improved", ["final_session_state"])
    assert (rows["weather_oslo"].change, rows["weather_oslo"].edited) == ("unchanged", [])
    assert rows["greeting"].trend("response_match_score") == "down"
    assert rows["plan_lisbon"].trend("response_match_score") == "up"
    assert rows["weather_oslo"].trend("response_match_score") == "same"
    assert rows["greeting"].trend("tool_call_count_v1") == ""  # informational: lower is not worse

    page = client.get(reverse("eval_app:run_compare"), {"a": before.pk, "b": after.pk}).content.decode()
    greeting_row = page[page.index('id="cmp-greeting"'):page.index("</tr>", page.index('id="cmp-greeting"'))]
    assert 'class="change-regressed"' in page[page.index('id="cmp-greeting"') - 40:page.index('id="cmp-greeting"')]
    assert "expectations edited" in greeting_row and "<code>conversation</code>" in greeting_row
    assert 'score-cell trend-down' in greeting_row
    lisbon_row = page[page.index('id="cmp-plan_lisbon"'):page.index("</tr>", page.index('id="cmp-plan_lisbon"'))]
    assert "<code>final_session_state</code>" in lisbon_row and "score-cell trend-up" in lisbon_row
    oslo_row = page[page.index('id="cmp-weather_oslo"'):page.index("</tr>", page.index('id="cmp-weather_oslo"'))]
    assert "expectations edited" not in oslo_row and "trend-down" not in oslo_row and "trend-up" not in oslo_row
    assert page.index("cmp-greeting") < page.index("cmp-plan_lisbon") < page.index("cmp-weather_oslo")


def test_comparison_diffs_the_two_runs_tool_trajectories(demo_set):
    metrics = [{"metric_name": "tool_trajectory_avg_score", "threshold": 1.0}]
    first, second = make_run(demo_set, metrics=metrics), make_run(demo_set, metrics=metrics)
    for run, calls in ((first, [{"name": "plan_trip", "args": {"city": "Lisbon"}}]),
                       (second, [{"name": "plan_trip", "args": {"city": "Porto"}},
                                 {"name": "get_weather", "args": {"city": "Porto"}}])):
        result = add_result(run, "plan_lisbon", status="passed",
                            metrics=[metric("tool_trajectory_avg_score", 1.0, PASSED, threshold=1.0)])
        EvalInvocationResult.objects.create(case_result=result, index=0, actual={}, actual_tool_calls=calls)
    [comparison] = selectors.run_compare_page(first, second, size=50).rows
    assert comparison.trajectory_differs and comparison.change == "unchanged" and comparison.edited == []
    [[changed, extra]] = comparison.trajectory
    assert (changed.kind, extra.kind) == ("changed", "extra")
    assert [(a.key, a.expected, a.actual, a.kind) for a in changed.args] == [("city", "Lisbon", "Porto", "changed")]


def compared_runs(demo_set: EvalSet, cases: int) -> tuple[EvalRun, EvalRun]:
    """Two runs of `cases` cases (two repeats each): every fifth regressed, every fifth improved,
    one case only in the first run and one only in the second; the rest unchanged."""
    before, after = make_run(demo_set, metrics=[]), make_run(demo_set, metrics=[])
    for i in range(cases):
        was, now = {0: ("passed", "failed"), 1: ("failed", "passed")}.get(i % 5, ("passed", "passed"))
        for repeat in (0, 1):
            if i != cases - 1:
                EvalCaseResult.objects.create(run=before, eval_id=f"case{i:03d}", repeat=repeat, position=cases - i,
                                              status=was, metrics=[], case_data={})
            if i != 0:  # the second repeat of a regression still passes: one failure is enough
                EvalCaseResult.objects.create(run=after, eval_id=f"case{i:03d}", repeat=repeat, position=cases - i,
                                              status="passed" if repeat and was == "passed" else now,
                                              metrics=[], case_data={})
    return before, after


def test_the_comparison_pages_regressions_first_and_counts_every_case(client, demo_set, monkeypatch):
    before, after = compared_runs(demo_set, 12)
    shown, token = [], None
    while True:
        page = selectors.run_compare_page(before, after, size=5, token=token)
        shown += [(row.eval_id, row.change) for row in page.rows]
        if not page.next_token:
            break
        token = page.next_token
    changes = [change for _, change in shown]
    assert changes == sorted(changes, key=selectors.CHANGE_RANK.get) and len(shown) == 12
    # Within a change, in the order of run A's cases (position), as the page always showed them.
    assert [e for e, c in shown if c == "regressed"] == ["case010", "case005"]
    assert [e for e, c in shown if c == "added"] == ["case011"] and [e for e, c in shown if c == "removed"] == ["case000"]
    assert page.counts == {"regressed": 2, "improved": 2, "added": 1, "removed": 1, "unchanged": 6}

    monkeypatch.setattr(selectors, "COMPARE_PAGE", 5)
    url = reverse("eval_app:run_compare")
    first = client.get(url, {"a": before.pk, "b": after.pk}).content.decode()
    assert first.count('id="cmp-') == 5 and 'id="compare-more"' in first and "2 regressed" in first
    more_url = html.unescape(re.search(r'hx-get="([^"]+)"', first[first.index('id="compare-more"'):]).group(1))
    more = client.get(more_url, headers={"HX-Request": "true"}).content.decode()
    assert more.count('id="cmp-') == 5 and "<h1>" not in more and 'id="compare-more"' in more
    refused = client.get(url, {"a": before.pk, "b": after.pk, "after": "nope"})
    assert refused.status_code == 400 and "after" in refused.content.decode()


def test_the_comparison_queries_alike_for_5_and_50_cases(client, demo_set):
    counted = []
    for cases in (5, 50):
        before, after = compared_runs(demo_set, cases)
        url = reverse("eval_app:run_compare") + f"?a={before.pk}&b={after.pk}"
        client.get(url)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        counted.append(len(captured))
    assert counted[0] == counted[1]


def test_history_lists_every_metric_the_runs_asked_for(client, demo_set):
    run = make_run(demo_set, metrics=[{"metric_name": "final_response_match_v2", "threshold": 0.5},
                                      {"metric_name": "final_session_state_match", "threshold": 1.0}])
    run.done, run.passed = 1, 1
    run.save()
    add_result(run, "greeting", status="passed", metrics=[
        metric("final_response_match_v2", 0.75, PASSED, threshold=0.5),
        metric("final_session_state_match", 1.0, PASSED, threshold=1.0)])
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    history = page[page.index('class="list history"'):]
    for name in ("final_response_match_v2", "final_session_state_match"):
        assert f'<th class="metric-name" title="{name}">{name.replace("_", "_<wbr>")}</th>' in history
    assert "<td>0.75</td>" in history and "<polyline" in page


def test_the_history_chart_keeps_equal_lines_apart_and_gives_each_its_colour():
    runs = [SimpleNamespace(pk=pk, done=2, passed=2) for pk in (1, 2)]
    names = ["tool_trajectory_avg_score", "response_match_score", "final_response_match_v2", "final_session_state_match"]
    # Every line at 1.0, as the pass rate and tool_trajectory were on the demo's history.
    chart = selectors.trend_chart([selectors.RunSummary(run, dict.fromkeys(names, 1.0)) for run in runs])
    series = chart.series
    assert [s.name for s in series] == ["pass rate", *sorted(names)]
    assert len({s.colour for s in series}) == len(series)
    assert len({(s.dash, s.marker) for s in series}) == len(series)
    # Each is drawn narrower than the one under it, so the one under it shows at its edges.
    assert [s.width for s in series] == sorted((s.width for s in series), reverse=True)
    assert series[0].width > series[-1].width
    first, last = series[0].markers[0][1], series[-1].markers[0][1]
    assert first != last
    # And a few pixels apart, each point still titled with its own value.
    ys = [s.points[0].y for s in series]
    assert len(set(ys)) == len(series) and max(ys) - min(ys) == selectors.EQUAL_OFFSET * (len(series) - 1)
    assert {s.points[0].value for s in series} == {1.0}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("async_db_threads")
def test_a_session_becomes_a_case_with_its_real_user_and_initial_state(client):
    load_demo()
    # The demo's simulated-user set keeps its test_config.json's simulator, as an import does.
    simulated = EvalSet.objects.get(eval_set_id="trip_planner_simulated")
    assert simulated.user_simulator_config == {"type": "llm_backed", "model": "adkui-scripted-judge"}
    session = Session.objects.get(session_id=DEMO_SESSION)
    url = reverse("eval_app:add_session_form", args=[session.pk])
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<form" in fragment and "<html" not in fragment and "trip_planner_evals" in fragment

    done = client.post(url, {"new_eval_set_id": "from_sessions", "eval_id": "demo"}, headers={"HX-Request": "true"})
    assert done.status_code == 200 and "Added case" in done.content.decode()
    adk = selectors.adk_eval_case(EvalCase.objects.get(eval_id="demo"))
    assert adk.session_input.user_id == DEMO_USER
    # The state it was created with, not the state the run left behind (destination, last_answer, ...).
    assert adk.session_input.state == {"user:name": "Ada", "trip_budget": 1200}
    assert [t.user_content.parts[0].text for t in adk.conversation] == [
        "Hi there!", "Please plan a trip to Lisbon", "What is the weather in Lisbon?", "And the weather in Atlantis?",
    ]


def test_hostile_and_odd_stored_values_render_inert(client, demo_set):
    evil = "<script>window.__xss=1</script>"
    run = make_run(demo_set, metrics=[{"metric_name": evil, "threshold": 0.5, "criterion": {"threshold": 0.5,
                                                                                           "match_type": evil}}],
                   repeats=2, judge_model=evil)
    case_data = {"eval_id": "greeting", "final_session_state": {evil: evil},
                 "conversation_scenario": {"starting_prompt": evil, "conversation_plan": evil}}
    odd = [
        {"metric_name": evil, "score": evil, "eval_status": 99, "criterion": evil,
         "details": {"rubric_scores": [{"rubric_id": evil, "score": evil, "rationale": evil}]}},
        {"metric_name": "final_session_state_match", "score": 0.0, "eval_status": 2,
         "details": {"rubric_scores": [{"rubric_id": evil, "score": 0.0, "rationale": evil}]}},
    ]
    samples = [{"metric_name": evil, "invocation_index": evil, "sample": evil, "raw": evil,
                "verdicts": [{"rubric_id": evil, "property": evil, "verdict": evil, "rationale": evil}, evil],
                "dropped": [{"property": evil, "verdict": evil, "rationale": evil}]}, evil]
    result = add_result(run, "greeting", status=evil[:16], case_data=case_data, metrics=odd, judge_samples=samples,
                        error=evil)
    EvalInvocationResult.objects.create(case_result=result, index=0, user_text=evil, actual={},
                                        actual_response=evil, metrics=odd)
    add_result(run, "greeting", repeat=1, status="passed", case_data=case_data, metrics=odd)
    other = make_run(demo_set, metrics=run.metrics)
    add_result(other, "greeting", status="passed", case_data={**case_data, "rubrics": [evil]}, metrics=odd)
    for url in (reverse("eval_app:result_detail", args=[result.pk]), reverse("eval_app:run_detail", args=[run.pk]),
                reverse("eval_app:run_compare") + f"?a={run.pk}&b={other.pk}",
                reverse("eval_app:eval_set_detail", args=[demo_set.pk])):
        response = client.get(url)
        page = response.content.decode()
        assert response.status_code == 200, url
        assert "<script>window" not in page and "&lt;script&gt;window.__xss=1&lt;/script&gt;" in page, url


def test_a_run_keeps_its_mean_scores_as_it_ends_so_its_history_reads_no_results(demo_set, django_assert_num_queries):
    metrics = [{"metric_name": "tool_trajectory_avg_score", "threshold": 1.0}]
    run = make_run(demo_set, metrics=metrics)
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.RUNNING)
    for eval_id, score in (("greeting", 1.0), ("plan_lisbon", 0.5)):
        add_result(run, eval_id, status="passed", metrics=[metric("tool_trajectory_avg_score", score, PASSED)])
        EvalWorkItem.objects.create(run=run, eval_id=eval_id, state=EvalWorkItem.DONE)
    running = EvalRun.objects.get(pk=run.pk)
    assert running.metric_means is None
    with django_assert_num_queries(1):  # still running: read from its results
        [summary] = selectors.run_summaries([running])
    assert summary.metric_means == {"tool_trajectory_avg_score": 0.75}

    with transaction.atomic():
        assert progress.eval_run_refresh(run_pk=run.pk) == EvalRun.COMPLETED
    ended = EvalRun.objects.get(pk=run.pk)
    assert ended.metric_means == {"tool_trajectory_avg_score": 0.75}
    with django_assert_num_queries(0):
        [summary] = selectors.run_summaries([ended])
    assert summary.metric_means == {"tool_trajectory_avg_score": 0.75}
