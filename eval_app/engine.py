"""One eval case through ADK's own evaluation engine, on adkui's services.

`evaluate_case(run, item)` puts the case alone in an `InMemoryEvalSetsManager`
and runs ADK's `LocalEvalService` on it: inference with the agent's App (from
the runner adkui builds for it) on our session, artifact and memory services,
the case's user turns or ADK's user simulator; then ADK's evaluators, from
ADK's registry, for the run's metrics and the informational ones. Each case
(each repeat) runs in a sandbox app of its own (`agent@eval-<run>-<position>-<repeat>`),
starting from its `session_input` and nothing else: `app:` and `user:` state
are as the case says, whatever other cases (or workers running them at the
same time) wrote, so repeats are comparable and nothing the developer's own
sessions see changes. (`adk eval` shares one in-memory store across a run's
cases.) The session id is pinned per (run, case, repeat), and the result links
to the session's timeline.

The agent's own failures (ADK reports a failed inference) are the case's
`error`. A database or channel-layer fault is not the agent's: it raises
`InfrastructureFault`, for the caller to retry. ADK swallows inference
exceptions into a message, so the services are watched: each remembers the
infrastructure fault it raised.
"""
from __future__ import annotations

import copy
import functools
import inspect
import logging
import re
import sqlite3
import traceback
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

import psycopg
from asgiref.sync import async_to_sync
from google.adk import runners
from django.db import InterfaceError as DjangoInterfaceError
from django.db import OperationalError as DjangoOperationalError
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
    InferenceResult,
    InferenceStatus,
)
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import SessionInput
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.runners import Runner
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError

from sessions_app.runtime import make_runner
from sessions_app.sandbox import eval_label, is_sandbox, sandbox_app_name

from . import judges, metrics, state_metric
from .models import EvalCaseResult, EvalRun
from .progress import CaseOutcome, InvocationOutcome
from .selectors import WorkItem

if TYPE_CHECKING:
    from google.adk.evaluation.local_eval_service import LocalEvalService
    from google.adk.evaluation.metric_evaluator_registry import MetricEvaluatorRegistry

DEFAULT_USER_ID = "test_user_id"  # ADK's, for a case without session_input

INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    DjangoOperationalError, DjangoInterfaceError, sqlite3.OperationalError, sqlite3.InterfaceError,
    psycopg.OperationalError, psycopg.InterfaceError, RedisConnectionError, ConnectionRefusedError,
)

_STATUS = {
    EvalStatus.PASSED: EvalCaseResult.PASSED,
    EvalStatus.FAILED: EvalCaseResult.FAILED,
    EvalStatus.NOT_EVALUATED: EvalCaseResult.NOT_EVALUATED,
}


class SandboxNameMismatch(logging.Filter):
    """Drops ADK's "App name mismatch" warning for a sandbox app name: every eval case runs
    its agent as `agent@eval-<run>-…` on purpose."""

    CONFIGURED = re.compile(r'^App name mismatch detected\. The runner is configured with app name "([^"]+)"')

    def filter(self, record: logging.LogRecord) -> bool:
        match = self.CONFIGURED.match(record.getMessage())
        return not (match and is_sandbox(match.group(1)))


logging.getLogger("google_adk." + runners.__name__).addFilter(SandboxNameMismatch())


class InfrastructureFault(RuntimeError):
    """The database or the channel layer failed while a case ran: retry it, it is not the agent's error."""


class CaseNotRunnable(ValueError):
    pass


def infrastructure_error(exc: BaseException | None) -> BaseException | None:
    """The infrastructure error in `exc`'s chain (causes and contexts), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, INFRASTRUCTURE_ERRORS):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


# ---- one case -----------------------------------------------------------------


async def evaluate_case(run: EvalRun, item: WorkItem) -> CaseOutcome:
    """Run and score one case (one repeat) of `run`; raises InfrastructureFault."""
    started = perf_counter()
    label = eval_label(run.pk, item.position, item.repeat)
    sandbox = sandbox_app_name(run.app_name, label)
    outcome = CaseOutcome(
        case_pk=item.case_pk, eval_id=item.eval_id, repeat=item.repeat, position=item.position,
        status=EvalCaseResult.ERROR, case_data=item.data, app_name=sandbox,
    )
    try:
        case = case_to_run(item, sandbox=sandbox, session_id=label)
        outcome.user_id, outcome.session_id = case.session_input.user_id, case.session_input.session_id
        await _CaseRun(run, case, outcome).execute()
    except InfrastructureFault:
        raise
    except Exception as exc:
        if fault := infrastructure_error(exc):
            raise InfrastructureFault(_describe(fault)) from exc
        outcome.status, outcome.error = EvalCaseResult.ERROR, error_text(exc)
    outcome.seconds = perf_counter() - started
    return outcome


def evaluate_case_sync(run: EvalRun, item: WorkItem) -> CaseOutcome:
    """`evaluate_case` for sync callers (a task, the CLI)."""
    return async_to_sync(evaluate_case)(run, item)


def case_to_run(item: WorkItem, *, sandbox: str, session_id: str) -> AdkEvalCase:
    """The item's case, in `sandbox` under the pinned `session_id`, from its own session_input."""
    if not item.data:
        raise CaseNotRunnable(f"Case {item.eval_id!r} was deleted before it ran.")
    try:
        case = AdkEvalCase.model_validate(item.data)
    except ValidationError as exc:
        raise CaseNotRunnable(f"Case {item.eval_id!r} is not a valid ADK EvalCase: {exc}") from exc
    given = case.session_input
    session_input = SessionInput(
        app_name=sandbox, user_id=(given.user_id if given else "") or DEFAULT_USER_ID,
        state=dict(given.state) if given else {}, session_id=session_id,
    )
    return case.model_copy(update={"session_input": session_input})


def error_text(exc: BaseException) -> str:
    if isinstance(exc, CaseNotRunnable):
        return str(exc)
    return "".join(traceback.format_exception(exc, limit=-8))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__name__}: {exc}"


class _CaseRun:
    """One case's inference and evaluation through LocalEvalService."""

    def __init__(self, run: EvalRun, case: AdkEvalCase, outcome: CaseOutcome):
        self.run, self.case, self.outcome = run, case, outcome
        self.app_name = case.session_input.app_name
        self.eval_set_id = f"run-{run.pk}"
        self.faults: list[BaseException] = []
        self.judge_samples: list[dict[str, Any]] = []
        self.judge_model = run.judge_model or judges.default_judge_model()

    async def execute(self) -> None:
        runner = make_runner(self.run.app_name)
        self.runner = runner
        self.services = {
            "session_service": watched(runner.session_service, self.faults),
            "artifact_service": watched(runner.artifact_service, self.faults),
            "memory_service": watched(runner.memory_service, self.faults),
        }
        self.eval_sets = InMemoryEvalSetsManager()
        self.eval_sets.create_eval_set(app_name=self.app_name, eval_set_id=self.eval_set_id)
        self.eval_sets.add_eval_case(app_name=self.app_name, eval_set_id=self.eval_set_id, eval_case=self.case)
        # A retried case starts over, in a fresh session of the same pinned id.
        await self._session_service.delete_session(
            app_name=self.app_name, user_id=self.case.session_input.user_id,
            session_id=self.case.session_input.session_id,
        )
        self._check_faults()
        inference = await self._infer()
        self._check_faults()
        if inference.status != InferenceStatus.SUCCESS:
            self.outcome.error = inference.error_message or "The agent's inference failed."
            return
        result = await self._evaluate(inference)
        self._check_faults()
        self._fill(result)

    @property
    def _session_service(self):
        return self.services["session_service"]

    def _check_faults(self) -> None:
        if self.faults:
            raise InfrastructureFault(_describe(self.faults[0])) from self.faults[0]

    def _service(self, registry: MetricEvaluatorRegistry) -> LocalEvalService:
        # Imported when a case runs, not with this module: ADK's module imports its metric registry,
        # hence every evaluator and Vertex AI's SDK (~3 s), and this module is imported, through the
        # tasks that run it, by every process that queues a run (the server, the API's views).
        from google.adk.evaluation.local_eval_service import LocalEvalService  # noqa: PLC0415

        return LocalEvalService(
            root_agent=self.runner.agent, app=runner_app(self.runner), eval_sets_manager=self.eval_sets,
            metric_evaluator_registry=registry,
            user_simulator_provider=judges.user_simulator_provider(self.run.user_simulator_config, self.judge_model),
            **self.services,
        )

    async def _infer(self) -> InferenceResult:
        request = InferenceRequest(
            app_name=self.app_name, eval_set_id=self.eval_set_id, eval_case_ids=[self.case.eval_id],
            inference_config=InferenceConfig(parallelism=1),
        )
        # Built before the clock starts: a process's first case imports ADK's
        # evaluation engine here (seconds), which is not the agent's time.
        service = self._service(metrics.adk_registry())
        started = perf_counter()
        results = [r async for r in service.perform_inference(inference_request=request)]
        self.outcome.agent_seconds = perf_counter() - started
        return results[0]

    async def _evaluate(self, inference: InferenceResult) -> AdkEvalCaseResult:
        session = await self._session_service.get_session(
            app_name=self.app_name, user_id=self.case.session_input.user_id, session_id=inference.session_id,
        )
        registry = state_metric.registry_for_case(
            metrics.adk_registry(), expected=self.case.final_session_state,
            actual=dict(session.state) if session else None,
        )
        registry = judges.recording_registry(registry, self.judge_samples)
        request = EvaluateRequest(
            inference_results=[inference],
            evaluate_config=EvaluateConfig(eval_metrics=self._metrics(), parallelism=1),
        )
        results = [r async for r in self._service(registry).evaluate(evaluate_request=request)]
        return results[0]

    def _metrics(self) -> list[EvalMetric]:
        return metrics.run_metrics(self.run.metrics, judge_model=self.judge_model)

    def _fill(self, result: AdkEvalCaseResult) -> None:
        outcome = self.outcome
        outcome.status = _STATUS.get(result.final_eval_status, EvalCaseResult.NOT_EVALUATED)
        outcome.metrics = [m.model_dump(mode="json") for m in result.overall_eval_metric_results]
        outcome.invocations = [invocation_outcome(row) for row in result.eval_metric_result_per_invocation]
        outcome.adk_result = result.model_dump(mode="json", exclude={"session_details"})
        outcome.judge_samples = self.judge_samples


def invocation_outcome(row) -> InvocationOutcome:
    invocation = row.actual_invocation
    return InvocationOutcome(
        invocation_id=invocation.invocation_id,
        user_text=metrics.response_text(invocation.user_content),
        actual=invocation.model_dump(mode="json", exclude_none=True),
        actual_tool_calls=[{"name": c.name, "args": c.args or {}} for c in metrics.tool_calls(invocation)],
        actual_response=metrics.response_text(invocation.final_response),
        metrics=[m.model_dump(mode="json") for m in row.eval_metric_results],
    )


def runner_app(runner: Runner):
    """The runner's App with every plugin the runner has (adkui registers some on the runner itself)."""
    plugins = list(runner.plugin_manager.plugins)
    return runner.app.model_copy(update={"plugins": plugins})


def watched(service: Any, faults: list[BaseException]) -> Any:
    """A shallow copy of `service` (same class, same storage) whose coroutine
    methods remember the infrastructure faults they raise in `faults`."""
    service = copy.copy(service)
    for name in dir(type(service)):
        if name.startswith("_"):
            continue
        method = getattr(service, name)
        if inspect.iscoroutinefunction(method):
            setattr(service, name, _watch(method, faults))
    return service


def _watch(method: Callable[..., Awaitable[Any]], faults: list[BaseException]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except Exception as exc:
            if fault := infrastructure_error(exc):
                faults.append(fault)
            raise

    return call
