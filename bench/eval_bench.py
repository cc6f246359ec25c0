"""Eval benchmark: a 100-case eval set run against the demo agent on the scripted model.

Prints the run's total time, the agent's own time (inside ADK's Runner, which
includes its event appends through DjangoSessionService), and our overhead per
case beyond it: creating the case's session, scoring, storing the result and
the run's bookkeeping. Target: <= 20 ms per case.

    python bench/eval_bench.py [--cases 100] [--concurrency 1 4] [--latency 0.05]

The scripted model answers at once, so the agent is CPU- and database-bound and
running cases concurrently cannot help; --latency adds a delay to every model
call, as a hosted model has, to show what ADKUI_EVAL_CONCURRENCY buys then.

Runs on a fresh SQLite file (or DATABASE_URL if set), with DEBUG off.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-eval-bench-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("DEBUG", "0")  # DEBUG records every query: not what a deployment runs
os.environ.setdefault("SECRET_KEY", "eval-bench-throwaway")  # required with DEBUG off; nothing here is signed

import logging  # noqa: E402

import django  # noqa: E402

django.setup()
logging.getLogger("google_adk").setLevel(logging.ERROR)  # the demo app's context-cache advice, once per run

from django.core.management import call_command  # noqa: E402
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet  # noqa: E402

from adkui.adk import DjangoSessionService  # noqa: E402
from eval_app import engine, progress, services  # noqa: E402
from eval_app.evalset_files import ParsedEvalSet, default_specs  # noqa: E402
from eval_app.models import EvalRun, EvalSet  # noqa: E402

DEMO = ROOT / "eval_app" / "demo" / "trip_planner.evalset.json"
AGENT = "trip_planner"
TIMINGS: dict[str, list[float]] = defaultdict(list)


def hundred_cases(n: int) -> AdkEvalSet:
    """The demo's cases, repeated under new ids up to `n` cases."""
    demo = AdkEvalSet.model_validate_json(DEMO.read_text())
    cases = []
    for i in range(n):
        case = demo.eval_cases[i % len(demo.eval_cases)].model_copy(deep=True)
        case.eval_id = f"{case.eval_id}_{i:03d}"
        cases.append(case)
    return AdkEvalSet(eval_set_id="bench", eval_cases=cases)


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a sync or async function so each call's wall time is recorded under `name`."""
    if asyncio.iscoroutinefunction(fn):
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                TIMINGS[name].append(time.perf_counter() - start)
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                TIMINGS[name].append(time.perf_counter() - start)
    return wrapper


def add_model_latency(seconds: float) -> None:
    from runtime_app.scripted_model import ScriptedModel

    generate = ScriptedModel.generate_content_async

    async def slow(self: ScriptedModel, llm_request: Any, stream: bool = False) -> Any:
        await asyncio.sleep(seconds)
        async for response in generate(self, llm_request, stream):
            yield response

    ScriptedModel.generate_content_async = slow


def instrument() -> None:
    DjangoSessionService.create_session = timed("create session", DjangoSessionService.create_session)
    engine._score = timed("score", engine._score)
    progress.eval_case_result_store = timed("store result", progress.eval_case_result_store)


async def one_run(eval_set: EvalSet, concurrency: int) -> EvalRun:
    run = await asyncio.to_thread(
        services.eval_run_create, eval_set=eval_set, app_name=AGENT, specs=default_specs(),
        concurrency=concurrency, start=False,
    )
    await engine.execute_run(run.pk, worker="bench")
    return await EvalRun.objects.aget(pk=run.pk)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f} ms"


def report(run: EvalRun, wall: float, concurrency: int) -> None:
    cases = run.done
    print(f"\n{cases} cases, concurrency {concurrency}: {run.status}, {run.passed} passed")
    print(f"  total time                 {wall:7.2f} s   ({cases / wall:.0f} cases/s)")
    print(f"  agent's own time (summed)  {run.agent_seconds:7.2f} s   ({ms(run.agent_seconds / cases)} a case)")
    if concurrency == 1:
        print(f"  our overhead per case      {ms((wall - run.agent_seconds) / cases)}   (total - agent) / cases")
        for name, values in TIMINGS.items():
            print(f"    {name:<22} {ms(statistics.mean(values))} mean, {ms(statistics.median(values))} median")
    TIMINGS.clear()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each model call")
    args = parser.parse_args()
    if args.latency:
        add_model_latency(args.latency)
    await asyncio.to_thread(call_command, "migrate", verbosity=0)
    parsed = ParsedEvalSet(hundred_cases(args.cases), "evalset")
    eval_set = await asyncio.to_thread(services.eval_set_import, parsed=parsed, app_name=AGENT, replace=True)
    print(f"database: {os.environ['DATABASE_URL'].split('@')[-1]}, model latency {args.latency * 1000:.0f} ms")
    await one_run(eval_set, 1)  # warm-up: imports, the agent's first load, SQLite's page cache
    TIMINGS.clear()
    instrument()
    for concurrency in args.concurrency:
        start = time.perf_counter()
        run = await one_run(eval_set, concurrency)
        report(run, time.perf_counter() - start, concurrency)


if __name__ == "__main__":
    asyncio.run(main())
