"""Our runs as ADK's eval results: each case result with its metric scores, its actual and
expected invocations and (for a stored result) the session it ran in."""
from __future__ import annotations

from typing import Any

from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import (
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalStatus,
    ToolTrajectoryCriterion,
)
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from pydantic import ValidationError

from sessions_app.session_service import DjangoSessionService

from .. import selectors
from ..metrics import MetricSpec
from ..models import EvalCaseResult, EvalRun

_CASE_STATUS = {
    EvalCaseResult.PASSED: EvalStatus.PASSED,
    EvalCaseResult.FAILED: EvalStatus.FAILED,
    EvalCaseResult.NOT_EVALUATED: EvalStatus.NOT_EVALUATED,
    EvalCaseResult.ERROR: EvalStatus.FAILED,  # ADK has no status for a case that could not run
}


def case_results(run: EvalRun, *, sessions: bool) -> list[AdkEvalCaseResult]:
    specs = {spec["metric_name"]: MetricSpec.from_dict(spec) for spec in run.metrics}
    service = DjangoSessionService() if sessions else None
    return [_case_result(run, result, specs, service) for result in selectors.run_results_with_invocations(run)]


def _case_result(run: EvalRun, result: EvalCaseResult, specs: dict[str, MetricSpec],
                 service: DjangoSessionService | None) -> AdkEvalCaseResult:
    expected = [_invocation(turn) for turn in (result.case_data.get("conversation") or [])]
    per_invocation = [
        EvalMetricResultPerInvocation(
            actual_invocation=actual,
            expected_invocation=expected[row.index] if row.index < len(expected) else None,
            eval_metric_results=[_metric_result(m, specs) for m in row.metrics],
        )
        for row in result.invocations.all()
        if (actual := _invocation(row.actual)) is not None
    ]
    details = None
    if service is not None and result.adk_session_id:
        details = service.get_session_sync(
            app_name=run.app_name, user_id=result.user_id, session_id=result.adk_session_id)
    return AdkEvalCaseResult(
        eval_set_file=run.eval_set.eval_set_id, eval_set_id=run.eval_set.eval_set_id, eval_id=result.eval_id,
        final_eval_status=_CASE_STATUS.get(result.status, EvalStatus.NOT_EVALUATED),
        overall_eval_metric_results=[_metric_result(m, specs) for m in result.metrics],
        eval_metric_result_per_invocation=per_invocation, session_id=result.adk_session_id,
        session_details=details, user_id=result.user_id or None,
    )


def _invocation(data: Any) -> Invocation | None:
    """A stored invocation as ADK's model; one no longer valid is left out, never a 500."""
    try:
        return Invocation.model_validate(data)
    except ValidationError:
        return None


def _metric_result(score: dict[str, Any], specs: dict[str, MetricSpec]) -> EvalMetricResult:
    name = str(score.get("metric_name", ""))
    spec = specs.get(name)
    criterion = spec.criterion() if spec else None
    return EvalMetricResult(
        metric_name=name, threshold=score.get("threshold"), score=score.get("score"),
        criterion=ToolTrajectoryCriterion.model_validate(criterion) if isinstance(criterion, dict) else None,
        eval_status=EvalStatus.__members__.get(str(score.get("status")), EvalStatus.NOT_EVALUATED),
    )
