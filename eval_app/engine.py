"""Running an eval run: each case in its own session, through ADK's Runner on our services.

Inference is ADK's: the agent runs in a real `Runner` (`runtime_app.runners.make_runner`, reached through `sessions_app.runtime`,
so every case is a session in the session browser) and its events become
invocations with ADK's own `convert_events_to_eval_invocations`. Scoring is
ours (`metrics`). Each case's result is stored the moment it finishes.
"""
from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from contextlib import aclosing
from time import perf_counter

from asgiref.sync import sync_to_async
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.genai import types
from pydantic import ValidationError

from sessions_app.runtime import make_runner

from . import metrics, progress
from .metrics import MetricSpec
from .models import EvalCaseResult, EvalRun
from .progress import CaseOutcome, InvocationOutcome
from .selectors import WorkItem, pending_items

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = 1.0  # seconds; also how quickly a stop request is noticed

_STATUS = {
    metrics.PASSED: EvalCaseResult.PASSED,
    metrics.FAILED: EvalCaseResult.FAILED,
    metrics.NOT_EVALUATED: EvalCaseResult.NOT_EVALUATED,
}


async def execute_run(run_pk: int, *, worker: str) -> None:
    """Claim the run and run its unfinished cases; return when it is finished or stopped."""
    run = await sync_to_async(progress.eval_run_claim)(run_pk=run_pk, worker=worker)
    if run is None:
        return
    started = perf_counter()
    stopped, error = False, ""
    try:
        items = await sync_to_async(pending_items)(run)
        runner = make_runner(run.app_name)
        try:
            stopped = await _run_items(run, runner, items, worker)
        finally:
            await runner.close()
    except Exception as exc:  # the agent failed to load, or the database went away
        logger.exception("Eval run %s failed", run_pk)
        error = f"{type(exc).__name__}: {exc}"
    await sync_to_async(progress.eval_run_finish)(
        run_pk=run_pk, worker=worker, stopped=stopped, error=error, elapsed=perf_counter() - started
    )


async def _run_items(run: EvalRun, runner: Runner, items: list[WorkItem], worker: str) -> bool:
    """Run the items, `run.concurrency` at a time; True when stopped before the end."""
    specs = [MetricSpec.from_dict(m) for m in run.metrics]
    gate = asyncio.Semaphore(max(1, run.concurrency))

    async def one(item: WorkItem) -> None:
        async with gate:
            outcome = await run_case(runner, run_pk=run.pk, specs=specs, item=item)
            await sync_to_async(progress.eval_case_result_store)(run_pk=run.pk, outcome=outcome)

    tasks = [asyncio.create_task(one(item)) for item in items]
    watcher = asyncio.create_task(_watch(run.pk, worker, tasks))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    watcher.cancel()
    for result in results:
        if isinstance(result, Exception):  # storing failed; the run cannot vouch for its results
            raise result
    return any(isinstance(r, asyncio.CancelledError) for r in results)


async def _watch(run_pk: int, worker: str, tasks: list[asyncio.Task]) -> None:
    """Beat the run's heart; on a stop request cancel the cases still running."""
    while True:
        await asyncio.sleep(HEARTBEAT_EVERY)
        if await sync_to_async(progress.eval_run_heartbeat)(run_pk=run_pk, worker=worker):
            for task in tasks:
                task.cancel()
            return


async def run_case(runner: Runner, *, run_pk: int, specs: list[MetricSpec], item: WorkItem) -> CaseOutcome:
    """Run one case in a new session and score it; failures become an `error` outcome."""
    started = perf_counter()
    outcome = CaseOutcome(
        case_pk=item.case_pk, eval_id=item.eval_id, repeat=item.repeat, position=item.position,
        status=EvalCaseResult.ERROR, case_data=item.data, app_name=runner.app_name,
    )
    try:
        case = _case_to_run(item)
        actual = await _infer(runner, case, outcome, run_pk)
        _score(outcome, case, actual, specs)
    except Exception as exc:
        outcome.error = _error_text(exc)
    outcome.seconds = perf_counter() - started
    return outcome


def _case_to_run(item: WorkItem) -> AdkEvalCase:
    if not item.data:
        raise CaseNotRunnable(f"Case {item.eval_id!r} was deleted before it ran.")
    try:
        case = AdkEvalCase.model_validate(item.data)
    except ValidationError as exc:
        raise CaseNotRunnable(f"Case {item.eval_id!r} is not a valid ADK EvalCase: {exc}") from exc
    if case.conversation is None:
        raise CaseNotRunnable(
            "This case has a conversation_scenario: it needs ADK's LLM user simulator, which adkui does not run."
        )
    return case


class CaseNotRunnable(ValueError):
    pass


def _error_text(exc: Exception) -> str:
    if isinstance(exc, CaseNotRunnable):
        return str(exc)
    return "".join(traceback.format_exception(exc, limit=-8))


async def _infer(runner: Runner, case: AdkEvalCase, outcome: CaseOutcome, run_pk: int) -> list[Invocation]:
    """Send each expected user turn to the agent in a fresh session; one actual invocation per turn."""
    session_input = case.session_input
    user_id = session_input.user_id if session_input and session_input.user_id else f"eval-{run_pk}"
    session = await runner.session_service.create_session(
        app_name=runner.app_name,
        user_id=user_id,
        state=dict(session_input.state) if session_input else {},
        session_id=f"eval-{run_pk}-{outcome.position}-{outcome.repeat}-{uuid.uuid4().hex[:8]}",
    )
    outcome.user_id, outcome.session_id = user_id, session.id
    actual = []
    for expected in case.conversation or []:
        started = perf_counter()
        events = await _run_turn(runner, user_id, session.id, expected.user_content)
        seconds = perf_counter() - started
        outcome.agent_seconds += seconds
        actual.append(_invocation(events, expected.user_content, seconds))
    return actual


async def _run_turn(runner: Runner, user_id: str, session_id: str, message: types.Content) -> list[Event]:
    events: list[Event] = []
    async with aclosing(runner.run_async(user_id=user_id, session_id=session_id, new_message=message)) as stream:
        async for event in stream:
            events.append(event)
    return events


def _invocation(events: list[Event], user_content: types.Content, seconds: float) -> Invocation:
    if not events:
        return Invocation(user_content=user_content, duration=round(seconds, 3))
    # The Runner does not yield the user's own event; ADK's eval inference adds it the same way.
    user_event = Event(author="user", content=user_content, invocation_id=events[0].invocation_id)
    invocation = EvaluationGenerator.convert_events_to_eval_invocations([user_event, *events])[0]
    invocation.duration = round(seconds, 3)
    return invocation


def _score(outcome: CaseOutcome, case: AdkEvalCase, actual: list[Invocation], specs: list[MetricSpec]) -> None:
    scores = metrics.score_case(actual, case.conversation or [], specs)
    outcome.status = _STATUS[scores.status]
    outcome.metrics = [m.as_dict() for m in scores.overall]
    outcome.invocations = [
        InvocationOutcome(
            invocation_id=invocation.invocation_id,
            user_text=metrics.response_text(invocation.user_content),
            actual=invocation.model_dump(mode="json", exclude_none=True),
            actual_tool_calls=[{"name": c.name, "args": c.args or {}} for c in metrics.tool_calls(invocation)],
            actual_response=metrics.response_text(invocation.final_response),
            metrics=[m.as_dict() for m in per_metric],
        )
        for invocation, per_metric in zip(actual, scores.per_invocation)
    ]
