"""The metrics a run can ask for: ADK's metric registry, ADK's config, ADK's evaluators.

Nothing is scored here. `metrics_info()` lists what ADK's
`DEFAULT_METRIC_EVALUATOR_REGISTRY` registers (with adkui's
`final_session_state_match`), reached through `adk_registry()` only, on first
use (see there why); `eval_metrics()` turns test_config.json `criteria`
into ADK `EvalMetric`s through ADK's own `EvalConfig` and
`get_eval_metrics_from_config`, checking each criterion against the class its
metric's evaluator reads it with, and refusing what ADK would only fail on
mid-run (an unknown metric, a rubric metric without rubrics, a judge model that
cannot load). The informational metrics ADK records for every eval are added by
the engine, never asked for.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvents
from google.adk.evaluation.eval_config import (
    EvalConfig,
    append_default_efficiency_metrics,
    get_eval_metrics_from_config,
    get_evaluation_criteria_or_default,
)
from google.adk.evaluation.eval_metrics import (
    BaseCriterion,
    EvalMetric,
    EvalStatus,
    MetricInfo,
    RubricsBasedCriterion,
    ToolTrajectoryCriterion,
)
from google.adk.evaluation.evaluator import Evaluator
from google.genai import types
from pydantic import ValidationError

from . import judges, state_metric

if TYPE_CHECKING:
    from google.adk.evaluation.metric_evaluator_registry import MetricEvaluatorRegistry

TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE_MATCH = "response_match_score"
FINAL_SESSION_STATE = state_metric.METRIC_NAME

# Reported for every eval, never passing or failing (ADK's efficiency metrics).
INFORMATIONAL: tuple[str, ...] = tuple(m.metric_name for m in append_default_efficiency_metrics([]))

EXACT, IN_ORDER, ANY_ORDER = (m.name for m in ToolTrajectoryCriterion.MatchType)
MATCH_TYPES = (EXACT, IN_ORDER, ANY_ORDER)
MATCH_TYPE_NAMES = {m.value: m.name for m in ToolTrajectoryCriterion.MatchType}  # stored criteria may hold the int
PASSED, FAILED, NOT_EVALUATED = "PASSED", "FAILED", "NOT_EVALUATED"  # ADK's EvalStatus names


class MetricConfigError(ValueError):
    """A metric the run cannot use; `field` names where (`criteria.<metric>...`)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


# ---- the registry -----------------------------------------------------------


def adk_registry() -> MetricEvaluatorRegistry:
    """ADK's DEFAULT_METRIC_EVALUATOR_REGISTRY, adkui's final_session_state_match in it
    (registered as the module is imported: eval_app/adk_registries.py)."""
    # Imported here, on first use, not with this module: ADK's registry module imports every
    # evaluator it registers, Vertex AI's SDK among them (~3 s of a process's start), and this
    # module is imported by every process that loads the URLconf (the server, `manage.py check`)
    # for pages and APIs most requests never open. It is third-party; our modules import at the top.
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY  # noqa: PLC0415

    return DEFAULT_METRIC_EVALUATOR_REGISTRY


def metrics_info() -> list[MetricInfo]:
    """Every metric ADK's registry knows, with its description and value range."""
    return adk_registry().get_registered_metrics()


def metric_names() -> list[str]:
    return [info.metric_name for info in metrics_info()]


def evaluator_class(metric_name: str) -> type[Evaluator] | None:
    """The evaluator ADK's registry runs `metric_name` with (None: not registered)."""
    # The registry has no public lookup of a class; get_evaluator() would build one.
    entry = adk_registry()._registry.get(metric_name)  # noqa: SLF001
    return entry[0] if entry else None


def criterion_class(metric_name: str) -> type[BaseCriterion]:
    """The criterion class the metric's evaluator reads its criterion as."""
    return getattr(evaluator_class(metric_name), "criterion_type", BaseCriterion)


def is_judge_metric(metric_name: str) -> bool:
    """Whether the metric asks a judge model (its criterion has judge_model_options)."""
    return "judge_model_options" in criterion_class(metric_name).model_fields


def needs_rubrics(metric_name: str) -> bool:
    return issubclass(criterion_class(metric_name), RubricsBasedCriterion)


def status_name(eval_status: int | EvalStatus | str) -> str:
    """"PASSED" / "FAILED" / "NOT_EVALUATED" / "INFORMATIONAL" for ADK's EvalStatus (or its int)."""
    if isinstance(eval_status, str):
        return EvalStatus[eval_status].name
    return EvalStatus(eval_status).name


# ---- criteria <-> EvalMetrics -----------------------------------------------


def default_criteria() -> dict[str, Any]:
    """ADK's default criteria, as `adk eval` uses them without a test_config.json."""
    return criteria_of(get_eval_metrics_from_config(get_evaluation_criteria_or_default(None)))


def eval_metrics(criteria: dict[str, Any], *, judge_model: str = "") -> list[EvalMetric]:
    """ADK EvalMetrics for test_config.json `criteria` (informational metrics not included).

    A judge metric without a judge model of its own gets `judge_model` (else
    the default judge). Raises MetricConfigError naming the field."""
    if not isinstance(criteria, dict):
        raise MetricConfigError("criteria", "Must be an object mapping metric names to thresholds or criteria.")
    for name, criterion in criteria.items():
        _check_name(name)
        try:
            EvalConfig.model_validate({"criteria": {name: criterion}})
        except ValidationError as exc:
            raise MetricConfigError(f"criteria.{name}", _problems(exc, skip=2)) from exc
    config = EvalConfig.model_validate({"criteria": criteria})
    wanted = [m for m in get_eval_metrics_from_config(config) if m.metric_name in criteria]
    return [_checked(m, judge_model) for m in wanted]


def _check_name(name: str) -> None:
    if name in INFORMATIONAL:
        raise MetricConfigError(
            f"criteria.{name}", f"{name} is informational: ADK records it for every run, without a threshold."
        )
    if evaluator_class(name) is None:
        raise MetricConfigError(
            f"criteria.{name}", f"Unknown metric {name!r}; ADK's registry has: {', '.join(_selectable())}."
        )
    try:
        judges.check_metric_available(name)
    except ValueError as exc:
        raise MetricConfigError(f"criteria.{name}", str(exc)) from exc


def _selectable() -> list[str]:
    return [n for n in metric_names() if n not in INFORMATIONAL]


def _checked(eval_metric: EvalMetric, judge_model: str) -> EvalMetric:
    """The metric with its criterion as its evaluator's class and a judge model, checked."""
    name = eval_metric.metric_name
    field = f"criteria.{name}"
    try:
        eval_metric = with_judge_model(eval_metric, judge_model)
        criterion = criterion_class(name).model_validate(eval_metric.criterion.model_dump())
    except ValidationError as exc:
        raise MetricConfigError(field, _problems(exc)) from exc
    if isinstance(criterion, RubricsBasedCriterion) and not criterion.rubrics:
        raise MetricConfigError(f"{field}.rubrics", f"{name} needs at least one rubric.")
    if is_judge_metric(name):
        try:
            judges.check_model(criterion.judge_model_options.judge_model)
        except ValueError as exc:
            raise MetricConfigError(f"{field}.judge_model_options.judge_model", str(exc)) from exc
    return eval_metric.model_copy(update={"criterion": criterion})


def _problems(exc: ValidationError, skip: int = 0) -> str:
    """Pydantic's errors as `field: message`, the first `skip` parts of each path left out."""
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc'][skip:]) or 'value'}: {error['msg']}" for error in exc.errors()
    )


def with_judge_model(eval_metric: EvalMetric, judge_model: str = "") -> EvalMetric:
    """A judge metric whose criterion names no judge model of its own, given
    `judge_model` (else the default judge); any other metric as it is."""
    if not is_judge_metric(eval_metric.metric_name) or eval_metric.criterion is None:
        return eval_metric
    criterion = criterion_class(eval_metric.metric_name).model_validate(eval_metric.criterion.model_dump())
    options = criterion.judge_model_options
    if "judge_model_options" not in criterion.model_fields_set or "judge_model" not in options.model_fields_set:
        options = options.model_copy(update={"judge_model": judge_model or judges.default_judge_model()})
        criterion = criterion.model_copy(update={"judge_model_options": options})
    return eval_metric.model_copy(update={"criterion": criterion})


def run_metrics(stored: list[dict[str, Any]], *, judge_model: str = "") -> list[EvalMetric]:
    """A run's stored EvalMetric dicts, judge models filled in, plus ADK's informational metrics."""
    asked = [with_judge_model(EvalMetric.model_validate(m), judge_model) for m in stored]
    return append_default_efficiency_metrics(asked)


def criteria_of(metrics: list[EvalMetric]) -> dict[str, Any]:
    """EvalMetrics back as test_config.json `criteria` (informational ones left out)."""
    return {m.metric_name: _criterion_json(m) for m in metrics if m.metric_name not in INFORMATIONAL}


def _criterion_json(eval_metric: EvalMetric) -> float | dict[str, Any]:
    criterion = eval_metric.criterion
    if criterion is None:
        return float(eval_metric.threshold if eval_metric.threshold is not None else 0.0)
    data = criterion.model_dump(mode="json", exclude_defaults=True)
    if set(data) <= {"threshold"}:
        return float(criterion.threshold)
    data["threshold"] = criterion.threshold
    if isinstance(data.get("match_type"), int):  # ADK reads the name too; people read it better
        data["match_type"] = ToolTrajectoryCriterion.MatchType(data["match_type"]).name
    return data


# ---- reading invocations ----------------------------------------------------


def tool_calls(invocation: Invocation | None) -> list[types.FunctionCall]:
    """The invocation's tool calls in order, from either intermediate-data shape."""
    data = invocation.intermediate_data if invocation else None
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    if isinstance(data, InvocationEvents):
        return [
            part.function_call
            for event in data.invocation_events
            if event.content
            for part in event.content.parts or []
            if part.function_call
        ]
    return []


def response_text(content: types.Content | None) -> str:
    """The text parts of a response, one per line (how ADK reads a final response)."""
    if not content or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)
