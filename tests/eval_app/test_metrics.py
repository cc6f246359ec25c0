"""Our metric code scores exactly as ADK's own evaluators do, on the same invocations."""
from __future__ import annotations

import random

import pytest
from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvent, InvocationEvents
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types

from eval_app import metrics
from eval_app.metrics import MetricSpec

MATCH_TYPES = ["EXACT", "IN_ORDER", "ANY_ORDER"]


def call(name: str, args: dict | None = None, *, id: str | None = None) -> types.FunctionCall:
    return types.FunctionCall(name=name, args=args, id=id)


def invocation(calls=(), text: str | None = None, *, as_events: bool = False, parts=None) -> Invocation:
    if as_events:
        data = InvocationEvents(invocation_events=[
            InvocationEvent(author="agent", content=types.Content(role="model", parts=[types.Part(function_call=c)]))
            for c in calls
        ] + [InvocationEvent(author="agent", content=types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(name="x", response={"ok": 1}))]))])
    else:
        data = IntermediateData(tool_uses=list(calls))
    if parts is not None:
        final = types.Content(role="model", parts=parts)
    else:
        final = types.Content(role="model", parts=[types.Part(text=text)]) if text is not None else None
    return Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text="hi")]),
        final_response=final,
        intermediate_data=data,
    )


A, A2, B, C = call("a", {"x": 1}), call("a", {"x": 2}), call("b", {"y": "z"}), call("c", {})
TRAJECTORIES = [
    ("identical", [A, B], [A, B]),
    ("args differ", [A2, B], [A, B]),
    ("order differs", [B, A], [A, B]),
    ("extra call before", [C, A, B], [A, B]),
    ("extra call between", [A, C, B], [A, B]),
    ("extra call after", [A, B, C], [A, B]),
    ("missing call", [A], [A, B]),
    ("empty expected", [A, B], []),
    ("empty actual", [], [A, B]),
    ("both empty", [], []),
    ("duplicate expected, one actual", [A], [A, A]),
    ("duplicates both", [A, A2, A], [A, A]),
    ("same name, only args differ", [A2], [A]),
    ("None args against empty args", [call("c", None)], [call("c", {})]),
    ("nested args", [call("n", {"p": {"q": [1, 2]}})], [call("n", {"p": {"q": [1, 2]}})]),
    ("nested args differ", [call("n", {"p": {"q": [2, 1]}})], [call("n", {"p": {"q": [1, 2]}})]),
    ("int against float", [call("a", {"x": 1.0})], [A]),
    ("ids are ignored", [call("a", {"x": 1}, id="adk-1")], [A]),
    ("any order with swap", [B, A2, A], [A, B]),
]


def adk_trajectory(match_type: str, ignore_args: bool, threshold: float = 1.0) -> TrajectoryEvaluator:
    criterion = ToolTrajectoryCriterion(threshold=threshold, match_type=match_type, ignore_args=ignore_args)
    return TrajectoryEvaluator(eval_metric=EvalMetric(metric_name=metrics.TRAJECTORY, criterion=criterion))


def assert_same_as_adk(ours: metrics.CaseScores, theirs, metric_index: int = 0) -> None:
    overall = ours.overall[metric_index]
    assert overall.score == theirs.overall_score
    assert overall.status == theirs.overall_eval_status.name
    assert len(ours.per_invocation) == len(theirs.per_invocation_results)
    for mine, adk in zip(ours.per_invocation, theirs.per_invocation_results):
        assert mine[metric_index].score == adk.score
        assert mine[metric_index].status == adk.eval_status.name


@pytest.mark.parametrize("match_type", MATCH_TYPES)
@pytest.mark.parametrize("ignore_args", [False, True])
@pytest.mark.parametrize("as_events", [False, True])
def test_trajectory_scores_equal_adks_on_each_case(match_type, ignore_args, as_events):
    # All cases at once: per-invocation 1/0 scores, and their mean as the case score.
    actual = [invocation(act, as_events=as_events) for _, act, _ in TRAJECTORIES]
    expected = [invocation(exp) for _, _, exp in TRAJECTORIES]
    for threshold in (1.0, 0.5, 0.0):
        spec = MetricSpec(metrics.TRAJECTORY, threshold, match_type, ignore_args)
        ours = metrics.score_case(actual, expected, [spec])
        theirs = adk_trajectory(match_type, ignore_args, threshold).evaluate_invocations(actual, expected)
        assert_same_as_adk(ours, theirs)


@pytest.mark.parametrize("name,act,exp", TRAJECTORIES, ids=[t[0] for t in TRAJECTORIES])
@pytest.mark.parametrize("match_type", MATCH_TYPES)
@pytest.mark.parametrize("ignore_args", [False, True])
def test_trajectory_single_invocation_equals_adk(name, act, exp, match_type, ignore_args):
    actual, expected = [invocation(act)], [invocation(exp)]
    ours = metrics.score_case(actual, expected, [MetricSpec(metrics.TRAJECTORY, 1.0, match_type, ignore_args)])
    theirs = adk_trajectory(match_type, ignore_args).evaluate_invocations(actual, expected)
    assert_same_as_adk(ours, theirs)


def test_trajectory_rules_on_known_examples():
    exact = MetricSpec(metrics.TRAJECTORY, 1.0)
    assert metrics.trajectory_matches([C, A, B], [A, B], "IN_ORDER", False)
    assert not metrics.trajectory_matches([B, A], [A, B], "IN_ORDER", False)
    assert metrics.trajectory_matches([B, A], [A, B], "ANY_ORDER", False)
    assert not metrics.trajectory_matches([A2, B], [A, B], "EXACT", False)
    assert metrics.trajectory_matches([A2, B], [A, B], "EXACT", True)
    assert not metrics.trajectory_matches([A], [A, A], "ANY_ORDER", False)
    assert metrics.trajectory_score(invocation([A]), invocation([A]), exact) == 1.0


def test_trajectory_equals_adk_on_random_trajectories():
    rng = random.Random(5)
    pool = [A, A2, B, C, call("d", {"k": [1]})]
    actual, expected = [], []
    for _ in range(400):
        actual.append(invocation(rng.choices(pool, k=rng.randint(0, 4))))
        expected.append(invocation(rng.choices(pool, k=rng.randint(0, 3))))
    for match_type in MATCH_TYPES:
        for ignore_args in (False, True):
            spec = MetricSpec(metrics.TRAJECTORY, 0.3, match_type, ignore_args)
            ours = metrics.score_case(actual, expected, [spec])
            theirs = adk_trajectory(match_type, ignore_args, 0.3).evaluate_invocations(actual, expected)
            assert_same_as_adk(ours, theirs)


RESPONSES = [
    ("identical", "The weather in Oslo is snow.", "The weather in Oslo is snow."),
    ("partial overlap", "It is sunny in Paris today", "Paris is sunny"),
    ("stemming", "I am planning trips", "I planned a trip"),
    ("case and punctuation", "DONE!!! Your trip, is planned.", "done your trip is planned"),
    ("no overlap", "apples", "oranges"),
    ("empty actual", "", "Something expected"),
    ("empty expected", "Something said", ""),
    ("both empty", "", ""),
    ("numbers", "It is 21 degrees, -3 tonight", "21 degrees and -3"),
    ("accents", "Café crème brûlée", "cafe creme brulee"),
    ("cjk", "東京の天気は晴れです", "東京は晴れ"),
    ("korean", "서울 날씨는 맑음", "서울 날씨 맑음"),
    ("thai with marks", "สวัสดีครับ วันนี้อากาศดี", "สวัสดี อากาศดี"),
    ("arabic", "الطقس مشمس اليوم", "الطقس مشمس"),
    ("mixed scripts", "Paris パリ is 晴れ", "パリ 晴れ Paris"),
    ("fullwidth", "ＡＢＣ １２３", "abc 123"),
    ("underscores", "snake_case_word", "snake case word"),
    ("repeated words", "go go go go", "go"),
]


@pytest.mark.parametrize("name,actual_text,expected_text", RESPONSES, ids=[r[0] for r in RESPONSES])
def test_response_match_equals_adks_rouge_evaluator(name, actual_text, expected_text):
    actual, expected = [invocation(text=actual_text)], [invocation(text=expected_text)]
    ours = metrics.score_case(actual, expected, [MetricSpec(metrics.RESPONSE_MATCH, 0.8)])
    theirs = RougeEvaluator(EvalMetric(metric_name=metrics.RESPONSE_MATCH, threshold=0.8)).evaluate_invocations(
        actual, expected
    )
    assert_same_as_adk(ours, theirs)


def test_response_match_over_many_invocations_and_odd_contents():
    actual = [invocation(text=a) for _, a, _ in RESPONSES] + [
        invocation(text=None),
        invocation(parts=[types.Part(text="first line"), types.Part(function_call=A), types.Part(text="second")]),
        invocation(parts=[]),
    ]
    expected = [invocation(text=e) for _, _, e in RESPONSES] + [
        invocation(text="anything"),
        invocation(text="first line\nsecond"),
        invocation(text="nothing"),
    ]
    for threshold in (0.8, 0.3, 0.0):
        ours = metrics.score_case(actual, expected, [MetricSpec(metrics.RESPONSE_MATCH, threshold)])
        theirs = RougeEvaluator(EvalMetric(metric_name=metrics.RESPONSE_MATCH, threshold=threshold)).evaluate_invocations(
            actual, expected
        )
        assert_same_as_adk(ours, theirs)


def test_case_verdict_is_separate_from_each_metric_verdict():
    actual, expected = [invocation([A], "Done! Your trip is planned.")], [invocation([A2], "Done! Your trip is planned.")]
    specs = [MetricSpec(metrics.TRAJECTORY, 1.0), MetricSpec(metrics.RESPONSE_MATCH, 0.8)]
    scores = metrics.score_case(actual, expected, specs)
    assert [(m.metric_name, m.score, m.status) for m in scores.overall] == [
        (metrics.TRAJECTORY, 0.0, "FAILED"),
        (metrics.RESPONSE_MATCH, 1.0, "PASSED"),
    ]
    assert scores.status == "FAILED"


def test_an_empty_conversation_is_not_evaluated_as_in_adk():
    scores = metrics.score_case([], [], [MetricSpec(metrics.TRAJECTORY, 1.0)])
    theirs = adk_trajectory("EXACT", False).evaluate_invocations([], [])
    assert scores.overall[0].score is theirs.overall_score is None
    assert scores.overall[0].status == theirs.overall_eval_status.name == "NOT_EVALUATED"
    assert scores.status == "NOT_EVALUATED"


def test_case_status_follows_adk():
    assert metrics.case_status(["PASSED", "NOT_EVALUATED"]) == "PASSED"
    assert metrics.case_status(["PASSED", "FAILED"]) == "FAILED"
    assert metrics.case_status(["NOT_EVALUATED"]) == "NOT_EVALUATED"
    assert metrics.case_status([]) == "NOT_EVALUATED"
