"""Reads: eval sets, runs and their pending work, run history and trends,
result details, run comparison, and eval cases built from stored sessions."""
from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import mean, pstdev
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Max, Min, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.urls import NoReverseMatch, reverse
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvent, InvocationEvents, SessionInput
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.genai import types

from sessions_app import page_tokens
from sessions_app import selectors as session_selectors
from sessions_app.page_tokens import Page, keyset_page
from sessions_app.models import Session
from sessions_app.sandbox import real_app_name

from . import diffs, metrics
from .scores import metric_means as results_metric_means
from .scores import is_score
from .evalset_files import build_eval_set
from .models import EvalCase, EvalCaseResult, EvalRun, EvalSet

# ---- eval sets --------------------------------------------------------------


# Rows a page of each list holds; "more" loads the next page (keyset: any page costs what the first does).
EVAL_SETS_PAGE = 50
CASES_PAGE = 50
HISTORY_PAGE = 30
COMPARE_PAGE = 50
RESULTS_PAGE = 50
LAB_PAGE = 50  # cases of the judge lab
EVAL_SET_ORDER = ("app_name", "eval_set_id")  # unique together: a position names one set
CASE_ORDER = ("position", "pk")
RUN_ORDER = ("-pk",)
RESULT_ORDER = ("-pk",)  # newest first: live rows arrive on top, "older results" continues below
RESULT_CASE_ORDER = ("position", "repeat", "pk")  # the API's: the run's cases in order


def _eval_sets() -> QuerySet[EvalSet]:
    """Sets with their case count and newest run's pk: subqueries per set shown, where a
    join and GROUP BY would count the cases of every set before a page is cut."""
    cases = (EvalCase.objects.filter(eval_set=OuterRef("pk")).order_by().values("eval_set")
             .annotate(n=Count("pk")).values("n"))
    newest = EvalRun.objects.filter(eval_set=OuterRef("pk")).order_by("-pk").values("pk")[:1]
    return EvalSet.objects.annotate(
        case_count=Coalesce(Subquery(cases, output_field=IntegerField()), Value(0)), last_run=Subquery(newest)
    )


def eval_set_list() -> list[EvalSet]:
    return list(_eval_sets().order_by(*EVAL_SET_ORDER))


def eval_set_page(*, size: int, token: str | None = None) -> Page[EvalSet]:
    return keyset_page(_eval_sets(), order=EVAL_SET_ORDER, size=size, token=token)


def runs_by_pk(pks: list[int]) -> dict[int, EvalRun]:
    return EvalRun.objects.in_bulk([pk for pk in pks if pk])


def eval_sets_for_app(app_name: str) -> QuerySet[EvalSet]:
    """The sets a session of `app_name` may join: its agent's, and those for any agent."""
    return EvalSet.objects.filter(app_name__in=[app_name, ""])


def eval_set_case_page(eval_set: EvalSet, *, size: int, token: str | None = None) -> Page[EvalCase]:
    return keyset_page(eval_set.cases.all(), order=CASE_ORDER, size=size, token=token)


def eval_case_ids(eval_set: EvalSet) -> list[str]:
    return list(eval_set.cases.ordered().values_list("eval_id", flat=True))


def adk_eval_case(case: EvalCase) -> AdkEvalCase:
    """The stored case as ADK's EvalCase (the models do not import ADK: every process loads them at start)."""
    return AdkEvalCase.model_validate(case.data)


def adk_eval_set(eval_set: EvalSet) -> AdkEvalSet:
    """The stored set as ADK's EvalSet, cases in order, for export."""
    return build_eval_set(
        eval_set_id=eval_set.eval_set_id, name=eval_set.name, description=eval_set.description,
        creation_timestamp=eval_set.creation_timestamp, cases=[c.data for c in eval_set.cases.ordered()],
    )


def session_url(session_pk: int | None) -> str:
    """The session page, once sessions_app serves one; "" otherwise."""
    if not session_pk:
        return ""
    try:
        return reverse("runtime:session_detail", args=[session_pk])
    except NoReverseMatch:
        return ""


# ---- cases from sessions ----------------------------------------------------


def session_initial_state(session: Session) -> dict[str, Any]:
    """The real state as of the start of the session, keys prefixed by scope: its own
    initial keys and the `app:` and `user:` keys as they were when it was created."""
    return session_selectors.state_as_of(session, 0).merged()


def proposed_final_state(session: Session, seq: int) -> dict[str, Any]:
    """The state right after event #`seq` (session, `app:` and `user:` keys; `temp:` keys
    are never stored): what a case made of the session up to there expects at its end."""
    return session_selectors.state_as_of(session, seq).merged()


def default_eval_id(session: Session, at: int | None = None) -> str:
    name = f"session_{session.session_id}" + (f"_at_{at}" if at is not None else "")
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")[:200]


def eval_case_from_session(
    session: Session, *, eval_id: str, at: int | None = None, final_session_state: dict[str, Any] | None = None,
) -> AdkEvalCase:
    """The session's invocations (up to event #`at`, when given) as an eval case: each
    user turn, with its final response and tool calls as the expectation, the session's
    real user id and state as of its start (not the agent's empty state, as adk web
    does), and `final_session_state` as the expected state at the end."""
    if at is None:
        events = session_selectors.adk_events(session_selectors.session_event_json(session=session))
    else:
        events = [event for seq, event in session_selectors.event_page(session, limit=at) if seq <= at]
    conversation = [
        _expected_invocation(invocation)
        for invocation in EvaluationGenerator.convert_events_to_eval_invocations(events)
        if invocation.user_content.parts
    ]
    return AdkEvalCase(
        eval_id=eval_id,
        conversation=conversation,
        session_input=SessionInput(
            app_name=real_app_name(session.app.name), user_id=session.user_id, state=session_initial_state(session)
        ),
        final_session_state=final_session_state or {},
        creation_timestamp=time.time(),
    )


def _expected_invocation(invocation: Invocation) -> Invocation:
    """The turn as ADK 2.13's add-session stores it (`invocationEvents`, adk-web's editor shows them),
    less ADK's per-run call ids: the metrics compare names and args, and a later run's ids differ."""
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        data = InvocationEvents(invocation_events=[_without_call_ids(event) for event in data.invocation_events])
    else:
        calls = [types.FunctionCall(name=c.name, args=c.args or {}) for c in metrics.tool_calls(invocation)]
        data = IntermediateData(tool_uses=calls)
    return Invocation(
        invocation_id=invocation.invocation_id,
        user_content=invocation.user_content,
        final_response=invocation.final_response,
        intermediate_data=data,
        creation_timestamp=invocation.creation_timestamp,
    )


def _without_call_ids(event: InvocationEvent) -> InvocationEvent:
    event = event.model_copy(deep=True)
    for part in (event.content.parts or []) if event.content else []:
        for call in (part.function_call, part.function_response):
            if call is not None:
                call.id = None
    return event


# ---- runs -------------------------------------------------------------------


def run_find(run_pk: int) -> EvalRun | None:
    return EvalRun.objects.select_related("eval_set").filter(pk=run_pk).first()


def run_result_page(run: EvalRun, *, size: int, token: str | None = None) -> Page[EvalCaseResult]:
    """Newest first: the live page puts each finished case on top."""
    return keyset_page(run.results.all(), order=RESULT_ORDER, size=size, token=token)


def run_results_after(run: EvalRun, *, after: int, limit: int) -> list[EvalCaseResult]:
    """Up to `limit` results newer than result `after`, newest first: what a page
    holding the results up to `after` is missing."""
    return list(run.results.filter(pk__gt=after).order_by(*RESULT_ORDER)[:limit])


def run_results_by_case(run: EvalRun) -> list[EvalCaseResult]:
    return list(run.results.order_by(*RESULT_CASE_ORDER))


def run_results_by_case_page(run: EvalRun, *, size: int, token: str | None = None) -> Page[EvalCaseResult]:
    return keyset_page(run.results.all(), order=RESULT_CASE_ORDER, size=size, token=token)


def other_runs(run: EvalRun, *, limit: int = 20) -> list[EvalRun]:
    """The newest other runs of the run's set, to compare it with."""
    return list(run.eval_set.runs.exclude(pk=run.pk).order_by("-pk")[:limit])


def runs_in_progress(*, limit: int = 10) -> list[EvalRun]:
    """The newest queued or running runs, with their sets (the home page)."""
    active = EvalRun.objects.filter(status__in=EvalRun.ACTIVE).select_related("eval_set")
    return list(active.order_by("-pk")[:limit])


@dataclass(frozen=True)
class LatestRun:
    """A set's newest run that is over and finished at least one case."""

    run: EvalRun

    @property
    def pass_percent(self) -> int:
        return round(100 * self.run.passed / self.run.done)


def latest_run_per_set(*, limit: int = 10) -> list[LatestRun]:
    """Per eval set, its newest run that is over (a running run's rate is still moving;
    `runs_in_progress` has those) and has results, the sets run most recently
    first: two queries, however many runs there are."""
    over = Q(runs__done__gt=0) & ~Q(runs__status__in=EvalRun.ACTIVE)
    sets = (EvalSet.objects.annotate(latest=Max("runs__pk", filter=over))
            .filter(latest__isnull=False).order_by("-latest").values_list("latest", flat=True)[:limit])
    runs = EvalRun.objects.select_related("eval_set").in_bulk(list(sets))
    return [LatestRun(runs[pk]) for pk in sorted(runs, reverse=True)]


@dataclass
class WorkItem:
    """One case, one repeat: the unit a run stores a result for."""

    case_pk: int | None
    eval_id: str
    position: int
    repeat: int
    data: dict[str, Any]


def pending_items(run: EvalRun) -> list[WorkItem]:
    """The (case, repeat) pairs of the run that have no stored result yet."""
    done = set(run.results.values_list("eval_id", "repeat"))
    cases = {c.eval_id: c for c in EvalCase.objects.filter(eval_set_id=run.eval_set_id, eval_id__in=run.eval_ids)}
    items = []
    for repeat in range(run.repeats):
        for position, eval_id in enumerate(run.eval_ids):
            if (eval_id, repeat) in done:
                continue
            case = cases.get(eval_id)
            items.append(WorkItem(case.pk if case else None, eval_id, position, repeat, case.data if case else {}))
    return items


# ---- run history and trend --------------------------------------------------


@dataclass
class RunSummary:
    run: EvalRun
    metric_means: dict[str, float | None]

    @property
    def pass_rate(self) -> float | None:
        return self.run.passed / self.run.done if self.run.done else None


def run_history(eval_set: EvalSet, *, limit: int = 30) -> list[RunSummary]:
    """The newest runs of the set, oldest first, each with its mean score per metric."""
    return run_summaries(list(eval_set.runs.order_by("-pk")[:limit])[::-1])


def run_history_page(eval_set: EvalSet, *, size: int, token: str | None = None) -> Page[RunSummary]:
    """A page of the set's runs, newest first, each with its mean score per metric."""
    page = keyset_page(eval_set.runs.all(), order=RUN_ORDER, size=size, token=token)
    return Page(run_summaries(page.rows), page.next_token)


def run_summaries(runs: list[EvalRun]) -> list[RunSummary]:
    """Each run with its mean score per metric: stored on the finished runs,
    read from the results (one query) for those still running."""
    computed = results_metric_means([run.pk for run in runs if run.metric_means is None])
    summaries = []
    for run in runs:
        means = run.metric_means if run.metric_means is not None else computed.get(run.pk, {})
        summaries.append(RunSummary(run, {name: means.get(name) for name in run.metric_names}))
    return summaries


# One colour, dash pattern and marker per line, in the order the lines are drawn
# (pass rate first): distinct colours as far as they go (Okabe-Ito's, readable
# with colour blindness, darkened where pale on white), and lines of equal
# values stay apart by their dashes, markers and widths (see `ChartSeries`).
SERIES_COLOURS = ("#0b8043", "#0072b2", "#d55e00", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c7b00")
SERIES_DASHES = ("", "7 4", "2 3", "10 3 2 3", "4 2", "1 4")
SERIES_MARKERS = ("circle", "square", "diamond", "triangle")
MARKER_R = 3.0
EQUAL_OFFSET = 3.0  # px between lines of equal value


def history_metric_names(history: list[RunSummary]) -> list[str]:
    """Every metric the runs of a history asked for, in first-asked order."""
    return list(dict.fromkeys(name for summary in history for name in summary.run.metric_names))


@dataclass
class ChartPoint:
    x: float
    y: float
    value: float
    run_pk: int


@dataclass
class ChartSeries:
    name: str
    colour: str
    index: int = 0  # drawing order: a later line is narrower and dashed, so one on top of another leaves it visible
    count: int = 1
    points: list[ChartPoint] = field(default_factory=list)

    @property
    def dash(self) -> str:
        return SERIES_DASHES[self.index % len(SERIES_DASHES)]

    @property
    def _below(self) -> int:
        """How many lines are drawn after this one (capped: a wide line would hide its slope)."""
        return min(self.count - 1 - self.index, 3)

    @property
    def width(self) -> float:
        return 1.5 + 1.5 * self._below

    @property
    def marker(self) -> str:
        return SERIES_MARKERS[self.index % len(SERIES_MARKERS)]

    def marker_path(self, x: float, y: float, r: float | None = None) -> str:
        """The SVG path of this series' marker centred on (x, y); an earlier line's is larger,
        so the marker drawn on top of it at the same value leaves a rim of it showing."""
        r = MARKER_R + 1.5 * self._below if r is None else r
        shape = self.marker
        if shape == "square":
            return f"M{x - r:.1f},{y - r:.1f}h{2 * r:.1f}v{2 * r:.1f}h{-2 * r:.1f}z"
        if shape == "diamond":
            return f"M{x:.1f},{y - r - 1:.1f}L{x + r + 1:.1f},{y:.1f}L{x:.1f},{y + r + 1:.1f}L{x - r - 1:.1f},{y:.1f}z"
        if shape == "triangle":
            return f"M{x:.1f},{y - r - 1:.1f}L{x + r + 1:.1f},{y + r:.1f}L{x - r - 1:.1f},{y + r:.1f}z"
        return f"M{x - r:.1f},{y:.1f}a{r},{r} 0 1,0 {2 * r:.1f},0a{r},{r} 0 1,0 {-2 * r:.1f},0"

    @property
    def markers(self) -> list[tuple[ChartPoint, str]]:
        return [(p, self.marker_path(p.x, p.y)) for p in self.points]

    @property
    def legend_marker(self) -> str:
        return self.marker_path(14, 6, 3.5)

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass
class TrendChart:
    width: int
    height: int
    pad: int
    series: list[ChartSeries]
    labels: list[tuple[float, int]]  # x, run pk

    def y_of(self, value: float) -> float:
        return self.pad + (1 - value) * (self.height - 2 * self.pad)

    @property
    def gridlines(self) -> list[tuple[float, str]]:
        return [(self.y_of(v), f"{v:.1f}") for v in (0.0, 0.5, 1.0)]


def trend_chart(history: list[RunSummary], *, width: int = 640, height: int = 180, pad: int = 28) -> TrendChart | None:
    """Pass rate and mean metric scores per run, as SVG coordinates (all values are 0..1)."""
    finished = [h for h in history if h.run.done]
    if not finished:
        return None
    chart = TrendChart(width, height, pad, [], [])
    step = (width - 2 * pad) / max(len(finished) - 1, 1)
    xs = [pad + i * step for i in range(len(finished))]
    chart.labels = [(x, h.run.pk) for x, h in zip(xs, finished)]
    names = ["pass rate"] + sorted({n for h in finished for n in h.metric_means})
    for name in names:
        series = ChartSeries(name, "")
        for x, summary in zip(xs, finished):
            value = summary.pass_rate if name == "pass rate" else summary.metric_means.get(name)
            if value is not None:
                series.points.append(ChartPoint(x, chart.y_of(min(max(value, 0.0), 1.0)), value, summary.run.pk))
        if series.points:
            chart.series.append(series)
    for index, series in enumerate(chart.series):
        series.index, series.count = index, len(chart.series)
        series.colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
    _part_equal_points(chart.series)
    return chart


def _part_equal_points(series: list[ChartSeries]) -> None:
    """A point at the value an earlier line has at the same run is drawn EQUAL_OFFSET px
    above it (the title keeps the value), so no line hides wholly under another."""
    seen: dict[tuple[float, float], int] = defaultdict(int)
    for line in series:
        for point in line.points:
            spot = (round(point.x, 3), round(point.y, 3))
            point.y -= EQUAL_OFFSET * seen[spot]
            seen[spot] += 1


# ---- one case result --------------------------------------------------------


def status_name(metric: dict[str, Any]) -> str:
    """A metric result's verdict: ADK's EvalStatus name (PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL)."""
    if "eval_status" in metric:
        try:
            return EvalStatus(metric["eval_status"]).name
        except ValueError:
            return str(metric["eval_status"])
    return str(metric.get("status") or "")  # results stored before ADK's engine


@dataclass
class RubricRow:
    rubric_id: str
    text: str
    score: float | None
    rationale: str


@dataclass
class StateKeyRow:
    """One expected key of final_session_state_match: the case's value against what the metric found."""

    key: str
    expected: Any
    score: float | None
    rationale: str

    @property
    def matched(self) -> bool:
        return self.score is not None and self.score >= 1.0


@dataclass
class MetricView:
    """One overall metric result of a case, as ADK reported it."""

    name: str
    score: float | None
    threshold: float | None
    status: str
    informational: bool
    criterion: dict[str, Any]
    rubrics: list[RubricRow] = field(default_factory=list)
    state_keys: list[StateKeyRow] = field(default_factory=list)
    details: list[tuple[str, Any]] = field(default_factory=list)  # token / duration breakdowns
    notes: list[str] = field(default_factory=list)  # why a metric was not evaluated, as ADK's result says


STATE_METRIC = "final_session_state_match"


def _rubric_texts(*sources: Any) -> dict[str, str]:
    texts: dict[str, str] = {}
    for rubrics in sources:
        for rubric in rubrics or []:
            if isinstance(rubric, dict) and rubric.get("rubric_id"):
                content = rubric.get("rubric_content") or {}
                texts.setdefault(rubric["rubric_id"], content.get("text_property") or "")
    return texts


def _criterion_rubrics(metric: dict[str, Any]) -> list[dict[str, Any]]:
    criterion = metric.get("criterion") or {}
    return criterion.get("rubrics") or [] if isinstance(criterion, dict) else []


def metric_views(result: EvalCaseResult) -> list[MetricView]:
    """The case's overall metrics with their scores, rubric by rubric and key by key where ADK gives them."""
    return [_metric_view(m, result.case_data) for m in result.metrics if isinstance(m, dict)]


def _metric_view(metric: dict[str, Any], case_data: dict[str, Any]) -> MetricView:
    name = str(metric.get("metric_name", ""))
    details = metric.get("details") if isinstance(metric.get("details"), dict) else {}
    scores = [s for s in details.get("rubric_scores") or [] if isinstance(s, dict)]
    view = MetricView(
        name=name, score=metric.get("score"), threshold=_threshold(metric), status=status_name(metric),
        informational=name in metrics.INFORMATIONAL,
        criterion=metric.get("criterion") if isinstance(metric.get("criterion"), dict) else {},
    )
    if name == STATE_METRIC:
        expected = case_data.get("final_session_state")
        expected = expected if isinstance(expected, dict) else {}
        by_key = {s.get("rubric_id"): s for s in scores}
        view.state_keys = [_state_key(key, value, by_key.get(key) or {}) for key, value in expected.items()]
        view.notes = [str(s["rationale"]) for s in scores if s.get("rubric_id") not in expected and s.get("rationale")]
    else:
        texts = _rubric_texts(_criterion_rubrics(metric), case_data.get("rubrics"))
        view.rubrics = [RubricRow(str(s.get("rubric_id", "")), texts.get(s.get("rubric_id"), ""), s.get("score"),
                                  str(s.get("rationale") or "")) for s in scores]
    for key in ("token_usage_details", "duration_details"):
        breakdown = details.get(key) if isinstance(details.get(key), dict) else {}
        view.details += [(k, v) for k, v in breakdown.items() if v is not None]
    return view


def _state_key(key: str, expected: Any, score: dict[str, Any]) -> StateKeyRow:
    return StateKeyRow(key, expected, score.get("score"), str(score.get("rationale") or ""))


def _threshold(metric: dict[str, Any]) -> float | None:
    criterion = metric.get("criterion")
    if isinstance(criterion, dict) and criterion.get("threshold") is not None:
        return criterion["threshold"]
    return metric.get("threshold")


@dataclass
class JudgeSampleView:
    sample: int
    verdicts: list[dict[str, Any]]
    dropped: list[dict[str, Any]]
    raw: str


@dataclass
class JudgeCallGroup:
    """The judge's samples for one metric on one invocation."""

    metric_name: str
    invocation_index: int | None
    samples: list[JudgeSampleView]

    @property
    def dropped_count(self) -> int:
        return sum(len(s.dropped) for s in self.samples)


def judge_groups(result: EvalCaseResult) -> list[JudgeCallGroup]:
    """Each judge call the case's metrics made, grouped by metric and invocation, in call order."""
    groups: dict[tuple[str, Any], JudgeCallGroup] = {}
    for n, call in enumerate(result.judge_samples or []):
        if not isinstance(call, dict):
            continue
        key = (str(call.get("metric_name", "")), call.get("invocation_index"))
        group = groups.setdefault(key, JudgeCallGroup(key[0], key[1], []))
        sample = call.get("sample")
        group.samples.append(JudgeSampleView(
            sample=sample if isinstance(sample, int) else n, raw=str(call.get("raw") or ""),
            verdicts=[v for v in call.get("verdicts") or [] if isinstance(v, dict)],
            dropped=[v for v in call.get("dropped") or [] if isinstance(v, dict)],
        ))
    return list(groups.values())


def dropped_verdicts(result: EvalCaseResult) -> int:
    return sum(g.dropped_count for g in judge_groups(result))


@dataclass
class InvocationView:
    index: int
    user_text: str
    simulated: bool
    expected_response: str
    actual_response: str
    expected_spans: list[diffs.Span]
    actual_spans: list[diffs.Span]
    calls: list[diffs.CallRow]
    metrics: list[dict[str, Any]]
    has_expectation: bool = True


def _calls(invocation: Invocation | None) -> list[dict[str, Any]]:
    return [{"name": c.name, "args": c.args or {}} for c in metrics.tool_calls(invocation)]


def expected_invocations(case_data: dict[str, Any]) -> list[Invocation]:
    return [Invocation.model_validate(i) for i in case_data.get("conversation") or []]


def is_scenario_case(case_data: dict[str, Any]) -> bool:
    """A conversation_scenario case: ADK's user simulator wrote its user turns."""
    return bool(case_data.get("conversation_scenario"))


def case_result_views(result: EvalCaseResult) -> list[InvocationView]:
    """Expected against actual for every invocation of a case result, with differences."""
    expected = expected_invocations(result.case_data)
    simulated = is_scenario_case(result.case_data)
    views = []
    for row in result.invocations.all():
        wanted = expected[row.index] if row.index < len(expected) else None
        expected_text = metrics.response_text(wanted.final_response) if wanted else ""
        left, right = diffs.text_diff(expected_text, row.actual_response)
        views.append(InvocationView(
            index=row.index, user_text=row.user_text, simulated=simulated, expected_response=expected_text,
            actual_response=row.actual_response, expected_spans=left, actual_spans=right,
            calls=diffs.trajectory_diff(_calls(wanted), row.actual_tool_calls), metrics=row.metrics,
            has_expectation=wanted is not None,
        ))
    return views


# ---- judge lab: one run's repeats -------------------------------------------


@dataclass
class Spread:
    metric_name: str
    count: int
    low: float
    high: float
    stdev: float  # population standard deviation of the case's scores across its repeats


@dataclass
class CaseRepeats:
    eval_id: str
    runs: int
    passed: int
    k: int
    statuses: list[str]
    spreads: list[Spread]

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def pass_at_k(self) -> bool:
        """Passed at least once in its k repeats."""
        return self.passed > 0

    @property
    def flaky(self) -> bool:
        """The verdict differed across repeats: some passed, some did not."""
        return 0 < self.passed < self.runs


def judge_lab_page(run: EvalRun, *, size: int, token: str | None = None) -> Page[CaseRepeats]:
    """Per case of a repeated run, a page of cases in run order (keyset on the case's position):
    pass rate, pass@k, flakiness and each metric's score spread. ValueError for a token no page wrote."""
    after = page_tokens.position(token, 1)[0] if token else -1
    cases = run.results.filter(position__gt=after).order_by("position").values_list("position", flat=True)
    positions = list(cases.distinct()[:size + 1])
    shown = positions[:size]
    grouped: dict[str, list[EvalCaseResult]] = defaultdict(list)
    for result in run.results.filter(position__in=shown).order_by("position", "repeat"):
        grouped[result.eval_id].append(result)
    rows = [_case_repeats(run, eval_id, results) for eval_id, results in grouped.items()]
    return Page(rows, page_tokens.encode([shown[-1]]) if len(positions) > size else "")


def _case_repeats(run: EvalRun, eval_id: str, results: list[EvalCaseResult]) -> CaseRepeats:
    scores: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for m in result.metrics:
            if is_score(m.get("score")):
                scores[str(m.get("metric_name"))].append(float(m["score"]))
    spreads = [Spread(name, len(values), min(values), max(values), pstdev(values)) for name, values in scores.items()]
    return CaseRepeats(
        eval_id=eval_id, runs=len(results), passed=sum(r.status == EvalCaseResult.PASSED for r in results),
        k=run.repeats, statuses=[r.status for r in results], spreads=spreads,
    )


# ---- comparing two runs -----------------------------------------------------

REGRESSED, IMPROVED, UNCHANGED, ADDED, REMOVED = "regressed", "improved", "unchanged", "added", "removed"
# What a case expects: an edit of these between two runs makes their verdicts incomparable as such.
EXPECTATION_FIELDS = ("conversation", "conversation_scenario", "final_session_state", "rubrics", "session_input")


@dataclass
class CaseSide:
    status: str
    scores: dict[str, float | None]
    calls: list[list[dict[str, Any]]]  # actual tool calls per invocation, from the first repeat
    result_pk: int
    case_data: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseComparison:
    eval_id: str
    a: CaseSide | None
    b: CaseSide | None
    change: str
    trajectory: list[list[diffs.CallRow]] = field(default_factory=list)
    trajectory_differs: bool = False
    edited: list[str] = field(default_factory=list)  # expectation fields that differ between the runs

    def delta(self, metric_name: str) -> float | None:
        if not (self.a and self.b):
            return None
        before, after = self.a.scores.get(metric_name), self.b.scores.get(metric_name)
        return None if before is None or after is None else after - before

    def trend(self, metric_name: str) -> str:
        """down / up / same for a graded metric's score; "" for informational ones or without two scores."""
        value = self.delta(metric_name)
        if value is None or metric_name in metrics.INFORMATIONAL:
            return ""
        return "same" if abs(value) < 1e-9 else ("up" if value > 0 else "down")


def edited_fields(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [name for name in EXPECTATION_FIELDS if (before.get(name) or None) != (after.get(name) or None)]


def _case_sides(run: EvalRun, eval_ids: list[str]) -> dict[str, CaseSide]:
    grouped: dict[str, list[EvalCaseResult]] = defaultdict(list)
    results = run.results.filter(eval_id__in=eval_ids).prefetch_related("invocations")
    for result in results.order_by("position", "repeat"):
        grouped[result.eval_id].append(result)
    sides = {}
    for eval_id, results in grouped.items():
        statuses = {r.status for r in results}
        if statuses == {EvalCaseResult.PASSED}:
            status = EvalCaseResult.PASSED
        elif statuses & {EvalCaseResult.FAILED, EvalCaseResult.ERROR}:
            status = EvalCaseResult.FAILED
        else:
            status = EvalCaseResult.NOT_EVALUATED
        scores: dict[str, list[float]] = defaultdict(list)
        for r in results:
            for m in r.metrics:
                if is_score(m.get("score")):
                    scores[m["metric_name"]].append(m["score"])
        first = results[0]
        calls = [inv.actual_tool_calls for inv in first.invocations.all()]
        sides[eval_id] = CaseSide(status, {k: mean(v) for k, v in scores.items()}, calls, first.pk, first.case_data)
    return sides


def _change(a: CaseSide | None, b: CaseSide | None) -> str:
    if a is None:
        return ADDED
    if b is None:
        return REMOVED
    was, now = a.status == EvalCaseResult.PASSED, b.status == EvalCaseResult.PASSED
    if was and not now:
        return REGRESSED
    if now and not was:
        return IMPROVED
    return UNCHANGED


CHANGE_RANK = {REGRESSED: 0, IMPROVED: 1, ADDED: 2, REMOVED: 3, UNCHANGED: 4}  # the compare page's order
COMPARE_ORDER = ("rank", "place", "eval_id")  # of `_compared_cases`' rows; the eval id is unique


@dataclass(frozen=True)
class ComparePage:
    rows: list[CaseComparison]
    next_token: str  # "" on the last page
    counts: dict[str, int]  # cases by change, over every page


def _compared_cases(a: EvalRun, b: EvalRun) -> QuerySet[EvalCaseResult]:
    """One row a case (eval id) of either run, with its change worked out by the database:
    a case passed in a run when every repeat of it passed. Ordered by rank, then the case's
    place in run A (a case only B has: in B), then eval id; so a page needs no case's results
    but its own, and no page reads a whole run."""
    in_a, in_b, passed = Q(run_id=a.pk), Q(run_id=b.pk), Q(status=EvalCaseResult.PASSED)
    cases = EvalCaseResult.objects.filter(run_id__in=[a.pk, b.pk]).values("eval_id").annotate(
        a_n=Count("pk", filter=in_a), a_ok=Count("pk", filter=in_a & passed),
        b_n=Count("pk", filter=in_b), b_ok=Count("pk", filter=in_b & passed),
        place=Coalesce(Min("position", filter=in_a), Min("position", filter=in_b)),
    )
    a_passed, b_passed = Q(a_ok=F("a_n")), Q(b_ok=F("b_n"))
    return cases.annotate(rank=Case(
        When(a_n=0, then=Value(CHANGE_RANK[ADDED])),
        When(b_n=0, then=Value(CHANGE_RANK[REMOVED])),
        When(a_passed & ~b_passed, then=Value(CHANGE_RANK[REGRESSED])),
        When(b_passed & ~a_passed, then=Value(CHANGE_RANK[IMPROVED])),
        default=Value(CHANGE_RANK[UNCHANGED]), output_field=IntegerField(),
    ))


def _change_counts(cases: QuerySet[EvalCaseResult]) -> dict[str, int]:
    sql, params = cases.order_by().values("rank").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rank, COUNT(*) FROM ({sql}) AS cases GROUP BY rank", params)
        by_rank = dict(cursor.fetchall())
    return {change: by_rank.get(rank, 0) for change, rank in CHANGE_RANK.items()}


def run_compare_page(a: EvalRun, b: EvalRun, *, size: int, token: str | None = None) -> ComparePage:
    """A page of the cases of either run (regressions first, see `_compared_cases`): verdicts,
    score deltas, the expectations edited between the runs and, where the agent's tool calls
    differ, A's trajectory against B's. ValueError for a token no page wrote."""
    every = _compared_cases(a, b)
    cases = every.filter(page_tokens.past(COMPARE_ORDER, page_tokens.position(token, 3))) if token else every
    found = list(cases.order_by(*COMPARE_ORDER)[:size + 1])
    page, more = found[:size], len(found) > size
    eval_ids = [c["eval_id"] for c in page]
    left, right = _case_sides(a, eval_ids), _case_sides(b, eval_ids)
    rows = [_compared(eval_id, left.get(eval_id), right.get(eval_id)) for eval_id in eval_ids]
    last = page[-1] if more else None
    next_token = page_tokens.encode([last[key] for key in COMPARE_ORDER]) if last else ""
    return ComparePage(rows, next_token, _change_counts(every))


def _compared(eval_id: str, side_a: CaseSide | None, side_b: CaseSide | None) -> CaseComparison:
    row = CaseComparison(eval_id, side_a, side_b, _change(side_a, side_b))
    if side_a and side_b:
        row.trajectory_differs = side_a.calls != side_b.calls
        row.edited = edited_fields(side_a.case_data, side_b.case_data)
    if row.trajectory_differs or (side_a and side_b and row.change in (REGRESSED, IMPROVED)):
        pairs = max(len(side_a.calls), len(side_b.calls))
        row.trajectory = [diffs.trajectory_diff(_at(side_a.calls, i), _at(side_b.calls, i)) for i in range(pairs)]
    return row


def _at(calls: list[list[dict[str, Any]]], index: int) -> list[dict[str, Any]]:
    return calls[index] if index < len(calls) else []


# ---- ADK's eval routes: what adk-web's Eval tab reads ---------------------------------


def eval_set_ids_for_app(app_name: str) -> list[str]:
    return sorted(set(eval_sets_for_app(app_name).values_list("eval_set_id", flat=True)))


def eval_set_for_app(app_name: str, eval_set_id: str) -> EvalSet | None:
    """The agent's own set of that id, else the set of that id for any agent."""
    found = {s.app_name: s for s in eval_sets_for_app(app_name).filter(eval_set_id=eval_set_id)}
    return found.get(app_name) or found.get("")


def eval_case_find(eval_set: EvalSet, eval_id: str) -> EvalCase | None:
    return eval_set.cases.filter(eval_id=eval_id).first()


def finished_runs_for_app(app_name: str) -> list[EvalRun]:
    """The agent's runs that are over, oldest first: ADK keeps a result once its run has ended."""
    runs = EvalRun.objects.filter(app_name=app_name).exclude(status__in=EvalRun.ACTIVE)
    return list(runs.select_related("eval_set").order_by("pk"))


def eval_set_result_id(run: EvalRun) -> str:
    """ADK names a result `<app>_<eval set>_<timestamp>`; ours end with the run's number instead."""
    return f"{run.app_name}_{run.eval_set.eval_set_id}_{run.pk}"


def finished_run_for_result_id(app_name: str, result_id: str) -> EvalRun | None:
    number = result_id.rpartition("_")[2]
    if not (number.isascii() and number.isdigit()) or len(number) > 18:  # beyond a 64-bit key: no run
        return None
    run = EvalRun.objects.select_related("eval_set").filter(pk=int(number), app_name=app_name).first()
    if run is None or run.is_active or eval_set_result_id(run) != result_id:
        return None
    return run


def run_results_with_invocations(run: EvalRun) -> list[EvalCaseResult]:
    return list(run.results.select_related("session__app").prefetch_related("invocations")
                .order_by("position", "repeat", "pk"))
