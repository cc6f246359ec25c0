"""`final_session_state_match`: does the session end in the state the case expects?

A metric in ADK's own registry. Every key of the case's `final_session_state`
(plain, `app:` and `user:` keys alike) must equal the session's state after the
last turn; the score is the share of expected keys that do, PASSED at or above
the threshold (1.0 unless the criterion says otherwise). Each key is reported
as one of ADK's rubric scores: `rubric_id` is the key, the score 1.0 or 0.0,
the rationale "expected … / actual …".

ADK hands an evaluator only the invocations, never the case nor the session,
so the states are bound to the evaluator class before it is used:
`registry_for_case` forks a registry with an evaluator that knows both (adkui's
engine does this for every case, after inference). The class registered in
ADK's default registry (by eval_app.adk_registries, when that registry's module
is imported) knows neither and reports NOT_EVALUATED, saying why.

`final_session_state_match` (the function) is the same metric as ADK's
`custom_metrics` entry for `adk eval`: ADK calls it with the metric, the actual
and expected invocations and the conversation scenario only, so neither the
case's expected state nor the session's state can reach it: it reports
NOT_EVALUATED with that reason rather than a made-up score.

No Django here: `adk eval` imports this module on its own.
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from google.adk.evaluation.eval_case import ConversationScenario, Invocation
from google.adk.evaluation.eval_metrics import (
    BaseCriterion,
    EvalMetric,
    EvalStatus,
    Interval,
    MetricInfo,
    MetricValueInfo,
)
from google.adk.evaluation.eval_rubrics import RubricScore
from google.adk.evaluation.evaluator import EvaluationResult, Evaluator, PerInvocationResult

if TYPE_CHECKING:
    # For its type only: the module imports Vertex AI's SDK (seconds), see eval_app/adk_registries.py.
    from google.adk.evaluation.metric_evaluator_registry import MetricEvaluatorRegistry

logger = logging.getLogger(__name__)

METRIC_NAME = "final_session_state_match"
DEFAULT_THRESHOLD = 1.0
NO_EXPECTED_STATE = "The case has no final_session_state to compare with."
NO_ACTUAL_STATE = "The session's final state was not given to the metric."
CUSTOM_FUNCTION_REASON = (
    "Not evaluated under `adk eval`: ADK calls a custom metric function with only the eval metric, the actual and "
    "expected invocations and the conversation scenario, so neither the case's final_session_state nor the "
    "session's state after the last turn reaches it. adkui's runs bind both to the metric."
)

State = dict[str, Any]


def metric_info() -> MetricInfo:
    return MetricInfo(
        metric_name=METRIC_NAME,
        description=(
            "Share of the case's final_session_state keys (plain, app: and user:) whose value equals the "
            "session's state after the last turn. Each key is reported with its expected and actual value."
        ),
        metric_value_info=MetricValueInfo(interval=Interval(min_value=0.0, max_value=1.0)),
    )


def register(registry: MetricEvaluatorRegistry) -> None:
    """Register the metric (states unknown) in `registry`, unless it is there already."""
    if METRIC_NAME not in {info.metric_name for info in registry.get_registered_metrics()}:
        registry.register_evaluator(metric_info=metric_info(), evaluator=FinalSessionStateEvaluator)


def registry_for_case(
    base: MetricEvaluatorRegistry, *, expected: Optional[State], actual: Optional[State]
) -> MetricEvaluatorRegistry:
    """A fork of `base` whose `final_session_state_match` compares `expected` with `actual`."""
    registry = base.fork()
    registry.register_evaluator(metric_info=metric_info(), evaluator=bound_evaluator(expected, actual))
    return registry


def bound_evaluator(expected: Optional[State], actual: Optional[State]) -> type[FinalSessionStateEvaluator]:
    # ADK's registry instantiates a class (it checks issubclass), so the states ride on a subclass.
    return type(
        "BoundFinalSessionStateEvaluator",
        (FinalSessionStateEvaluator,),
        {"expected_state": dict(expected) if expected else None, "actual_state": actual},
    )


class FinalSessionStateEvaluator(Evaluator):
    """Compares `expected_state` with `actual_state`; see the module's docstring."""

    criterion_type: ClassVar[type[BaseCriterion]] = BaseCriterion
    expected_state: ClassVar[Optional[State]] = None
    actual_state: ClassVar[Optional[State]] = None

    def __init__(self, eval_metric: EvalMetric):
        self._threshold = threshold_of(eval_metric)

    def evaluate_invocations(
        self,
        actual_invocations: list[Invocation],
        expected_invocations: Optional[list[Invocation]] = None,
        conversation_scenario: Optional[ConversationScenario] = None,
    ) -> EvaluationResult:
        if not self.expected_state:
            return not_evaluated(NO_EXPECTED_STATE)
        if self.actual_state is None:
            return not_evaluated(NO_ACTUAL_STATE)
        return compare(self.expected_state, self.actual_state, self._threshold, actual_invocations)


def threshold_of(eval_metric: EvalMetric) -> float:
    if eval_metric.criterion is not None:
        return eval_metric.criterion.threshold
    if eval_metric.threshold is not None:
        return eval_metric.threshold
    return DEFAULT_THRESHOLD


def compare(expected: State, actual: State, threshold: float, invocations: list[Invocation]) -> EvaluationResult:
    """Score = share of expected keys equal in `actual`; the verdict lands on the last invocation."""
    rubric_scores = [key_score(key, value, actual) for key, value in expected.items()]
    score = sum(r.score for r in rubric_scores) / len(rubric_scores)
    status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
    per_invocation = [PerInvocationResult(actual_invocation=invocation) for invocation in invocations]
    if per_invocation:
        per_invocation[-1] = PerInvocationResult(
            actual_invocation=invocations[-1], score=score, eval_status=status, rubric_scores=rubric_scores
        )
    return EvaluationResult(
        overall_score=score, overall_eval_status=status, per_invocation_results=per_invocation,
        overall_rubric_scores=rubric_scores,
    )


_ABSENT = object()


def key_score(key: str, expected: Any, actual: State) -> RubricScore:
    value = actual.get(key, _ABSENT)
    shown = "(absent)" if value is _ABSENT else _json(value)
    return RubricScore(
        rubric_id=key,
        score=1.0 if value is not _ABSENT and same(value, expected) else 0.0,
        rationale=f"expected {_json(expected)} / actual {shown}",
    )


def same(a: Any, b: Any) -> bool:
    """JSON equality: 1 equals 1.0, but true is not 1 (Python's == says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def not_evaluated(reason: str) -> EvaluationResult:
    """NOT_EVALUATED, the reason carried as the rationale of a rubric score named after the metric."""
    return EvaluationResult(
        overall_eval_status=EvalStatus.NOT_EVALUATED,
        overall_rubric_scores=[RubricScore(rubric_id=METRIC_NAME, rationale=reason)],
    )


def final_session_state_match(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: Optional[list[Invocation]] = None,
    conversation_scenario: Optional[ConversationScenario] = None,
) -> EvaluationResult:
    """The metric as `adk eval`'s custom_metrics function (code_config name
    `eval_app.state_metric.final_session_state_match`): NOT_EVALUATED, see CUSTOM_FUNCTION_REASON."""
    logger.warning("%s: %s", METRIC_NAME, CUSTOM_FUNCTION_REASON)
    return not_evaluated(CUSTOM_FUNCTION_REASON)
