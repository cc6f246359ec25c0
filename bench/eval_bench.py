"""Eval benchmark: 100 cases of the demo agent (scripted model, offline) run by
real `manage.py db_worker` processes, 1 worker against 2, cases/s side by side.

    DEBUG=0 .venv/bin/python bench/eval_bench.py [--cases 100] [--workers 1 2] [--latency 0.05]

Each case is one django-task (`eval_app.tasks.run_eval_item`) through ADK's
LocalEvalService; workers are started and warmed up (imports, the agent's
first load) before the clock starts, which runs from the run's creation to its
last case stored. --latency adds a delay to each model call, as a hosted model
has, in the workers (ADKUI_BENCH_MODEL_LATENCY): then the workers wait on the
model and more of them help more. --inline also times `eval_run_execute_inline`
(the CLI's path: no worker, this process).

Runs on a fresh SQLite file (or DATABASE_URL if set), with DEBUG off.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-eval-bench-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("DEBUG", "0")  # DEBUG records every query: not what a deployment runs
os.environ.setdefault("SECRET_KEY", "eval-bench-throwaway")  # required with DEBUG off; nothing here is signed
os.environ["ADKUI_TASKS_BACKEND"] = "django_tasks_db.DatabaseBackend"

import logging  # noqa: E402
import warnings  # noqa: E402

import django  # noqa: E402

django.setup()
logging.getLogger("google_adk").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")

from django.core.management import call_command  # noqa: E402
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet  # noqa: E402

from eval_app import metrics, services  # noqa: E402
from eval_app.evalset_files import ParsedEvalSet  # noqa: E402
from eval_app.models import EvalRun, EvalSet  # noqa: E402

DEMO = ROOT / "eval_app" / "demo" / "trip_planner.evalset.json"
AGENT = "trip_planner"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
# Run in each worker: the scripted model waits ADKUI_BENCH_MODEL_LATENCY seconds per call.
WORKER = """
import asyncio, os, sys
import django
django.setup()
from django.core.management import call_command
latency = float(os.environ.get("ADKUI_BENCH_MODEL_LATENCY") or 0)
if latency:
    from runtime_app.scripted_model import ScriptedModel
    generate = ScriptedModel.generate_content_async
    async def slow(self, llm_request, stream=False):
        await asyncio.sleep(latency)
        async for response in generate(self, llm_request, stream):
            yield response
    ScriptedModel.generate_content_async = slow
call_command("db_worker", *sys.argv[1:])
"""


def hundred_cases(n: int) -> AdkEvalSet:
    """The demo's cases, repeated under new ids up to `n` cases."""
    demo = AdkEvalSet.model_validate_json(DEMO.read_text())
    cases = []
    for i in range(n):
        case = demo.eval_cases[i % len(demo.eval_cases)].model_copy(deep=True)
        case.eval_id = f"{case.eval_id}_{i:03d}"
        cases.append(case)
    return AdkEvalSet(eval_set_id="bench", eval_cases=cases)


def start_workers(n: int, latency: float) -> list[subprocess.Popen]:
    env = {**os.environ, "ADKUI_BENCH_MODEL_LATENCY": str(latency), "LOG_LEVEL": "ERROR",
           "PYTHONWARNINGS": "ignore::UserWarning"}
    args = ["--no-reload", "--no-startup-delay", "--interval", "0.05", "--verbosity", "0"]
    return [subprocess.Popen([sys.executable, "-c", WORKER, *args], cwd=ROOT, env=env) for _ in range(n)]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(60)


def wait_finished(run: EvalRun, workers: list[subprocess.Popen]) -> EvalRun:
    while True:
        run.refresh_from_db()
        if run.status not in EvalRun.ACTIVE:
            return run
        if any(w.poll() is not None for w in workers):
            raise SystemExit("a worker exited during the benchmark")
        time.sleep(0.02)


def create_run(eval_set: EvalSet, eval_ids: list[str] | None = None, start: bool = True) -> EvalRun:
    return services.eval_run_create(eval_set=eval_set, app_name=AGENT, metrics=metrics.eval_metrics(CRITERIA),
                                    eval_ids=eval_ids, source="bench", start=start)


def with_workers(eval_set: EvalSet, n: int, latency: float) -> tuple[EvalRun, float]:
    workers = start_workers(n, latency)
    try:
        warm = [c.eval_id for c in eval_set.cases.all()[: 3 * n]]
        wait_finished(create_run(eval_set, warm), workers)  # imports and the agent's first load, in each worker
        started = time.perf_counter()
        run = wait_finished(create_run(eval_set), workers)
        return run, time.perf_counter() - started
    finally:
        stop_workers(workers)


def inline(eval_set: EvalSet) -> tuple[EvalRun, float]:
    services.eval_run_execute_inline(create_run(eval_set, [c.eval_id for c in eval_set.cases.all()[:3]], False))
    started = time.perf_counter()
    run = services.eval_run_execute_inline(create_run(eval_set, start=False))
    return run, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each model call")
    parser.add_argument("--inline", action="store_true", help="also time eval_run_execute_inline (no worker)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    eval_set = services.eval_set_import(parsed=ParsedEvalSet(hundred_cases(args.cases), "evalset"),
                                        app_name=AGENT, replace=True)
    print(f"database: {os.environ['DATABASE_URL'].split('@')[-1]}, {args.cases} cases, "
          f"model latency {args.latency * 1000:.0f} ms, DEBUG={os.environ['DEBUG']}")
    rows = []
    if args.inline:
        rows.append(("inline (no worker)", *inline(eval_set)))
    for n in args.workers:
        rows.append((f"{n} db_worker{'s' if n > 1 else ''}", *with_workers(eval_set, n, args.latency)))
    print(f"\n{'':<20} {'status':<10} {'passed':>7} {'seconds':>8} {'cases/s':>8}")
    for label, run, wall in rows:
        print(f"{label:<20} {run.status:<10} {run.passed:>7} {wall:>8.2f} {run.done / wall:>8.2f}")


if __name__ == "__main__":
    main()
