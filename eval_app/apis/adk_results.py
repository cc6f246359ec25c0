"""Our runs as ADK's eval results: each case's stored ADK `EvalCaseResult` (what ADK's
LocalEvalService answered), with the session it ran in when asked for, as ADK stores it."""
from __future__ import annotations

from typing import Any

from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetricResult, EvalStatus
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.sessions.session import Session as AdkSession
from google.genai import types
from pydantic import ValidationError

from adk_compat import create_eval_set_result
from sessions_app.session_service import DjangoSessionService

from .. import metrics, selectors
from ..models import EvalCaseResult, EvalRun


def case_results(run: EvalRun, *, sessions: bool, live: bool) -> list[AdkEvalCaseResult]:
    """ADK's EvalCaseResult of each finished case of the run, in the run's order. `live`: as ADK's
    engine hands them over (what its run route answers and `adk eval` prints); else as ADK reads
    them back from its result files (what its eval-results route answers)."""
    service = DjangoSessionService() if sessions else None
    return [case_result(run, result, service, live=live) for result in selectors.run_results_with_invocations(run)]


def eval_set_result(run: EvalRun) -> EvalSetResult:
    """The run as a new ADK EvalSetResult, named as `adk eval` names the one it stores
    (`<app>_<eval set>_<timestamp>`), each case with its session."""
    return create_eval_set_result(run.app_name, run.eval_set.eval_set_id,
                                  case_results(run, sessions=True, live=True))


def case_result(run: EvalRun, result: EvalCaseResult, service: DjangoSessionService | None, *,
                live: bool) -> AdkEvalCaseResult:
    adk = _stored(result) or _not_run(run, result)
    # The engine ran the case from a set of its own making; the result is of the run's set.
    adk.eval_set_id = adk.eval_set_file = run.eval_set.eval_set_id
    if live:
        _retype(adk)
    if service is not None and adk.session_id:
        adk.session_details = _session(service, result, adk)
    return adk


def _stored(result: EvalCaseResult) -> AdkEvalCaseResult | None:
    """The engine's ADK result; one no longer valid for ADK's model is treated as missing, never a 500."""
    if not result.adk_result:
        return None
    try:
        return AdkEvalCaseResult.model_validate(result.adk_result)
    except ValidationError:
        return None


def _retype(adk: AdkEvalCaseResult) -> None:
    """What JSON kept as plain data back as the classes ADK's engine made: each criterion as its
    evaluator's class (ADK's printer shows rubric texts from it), tool declarations as genai Tools."""
    for metric_result in _metric_results(adk):
        metric_result.criterion = _typed(metric_result)
    for invocation in _invocations(adk):
        _type_tools(invocation)


def _metric_results(adk: AdkEvalCaseResult) -> list[EvalMetricResult]:
    per_invocation = [m for row in adk.eval_metric_result_per_invocation for m in row.eval_metric_results]
    return [*adk.overall_eval_metric_results, *per_invocation]


def _typed(metric_result: EvalMetricResult) -> BaseCriterion | None:
    criterion = metric_result.criterion
    if criterion is None:
        return None
    try:
        return metrics.criterion_class(metric_result.metric_name).model_validate(criterion.model_dump())
    except ValidationError:
        return criterion


def _invocations(adk: AdkEvalCaseResult) -> list[Invocation]:
    rows = adk.eval_metric_result_per_invocation
    return [i for row in rows for i in (row.actual_invocation, row.expected_invocation) if i is not None]


def _type_tools(invocation: Invocation) -> None:
    if invocation.app_details is None:
        return
    for details in invocation.app_details.agent_details.values():
        details.tool_declarations = [_tool(t) for t in details.tool_declarations]


def _tool(declaration: Any) -> Any:
    if not isinstance(declaration, dict):
        return declaration
    try:
        return types.Tool.model_validate(declaration)
    except ValidationError:
        return declaration


def _not_run(run: EvalRun, result: EvalCaseResult) -> AdkEvalCaseResult:
    """A case with no ADK result (the agent raised before ADK could score it): FAILED with no
    metric results, as ADK's LocalEvalService reports a failed inference."""
    return AdkEvalCaseResult(
        eval_set_file=run.eval_set.eval_set_id, eval_set_id=run.eval_set.eval_set_id, eval_id=result.eval_id,
        final_eval_status=(EvalStatus.NOT_EVALUATED if result.status == EvalCaseResult.NOT_EVALUATED
                           else EvalStatus.FAILED),
        overall_eval_metric_results=[], eval_metric_result_per_invocation=[],
        session_id=result.adk_session_id, user_id=result.user_id or None,
    )


def _session(service: DjangoSessionService, result: EvalCaseResult, adk: AdkEvalCaseResult) -> AdkSession | None:
    """The session the case ran in (in the run's sandbox app, where the engine made it)."""
    if result.session is None:
        return None
    return service.get_session_sync(app_name=result.session.app.name, user_id=result.session.user_id,
                                    session_id=adk.session_id)
