"""`manage.py eval AGENT EVAL_SET`: run an eval set like `adk eval`, for CI.

EVAL_SET is an eval set file (.evalset.json, YAML, legacy .test.json) or the
id of a stored eval set, optionally followed by `:case_a,case_b` as in
`adk eval`. A file is imported first (replacing the cases of a stored set with
its id), so its run shows up in the UI's history. Prints ADK's summary and exits
1 when any case fails (or none ran), 2 on bad input.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.runtime import agent_names

from ... import services
from ...engine import execute_run
from ...evalset_files import EvalSetFileError, criteria_of, parse_eval_set_file, parse_test_config, specs_from_stored
from ...metrics import MetricSpec, response_text, tool_calls
from ...models import EvalCaseResult, EvalRun, EvalSet
from ...selectors import expected_invocations
from ...worker import WORKER_ID

RULE = "*" * 69
DASHES = "-" * 69


class Command(BaseCommand):
    help = "Run an eval set against an agent and print ADK's summary; exit 1 when any case fails."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", help="agent (app) name, as listed in the agents directory")
        parser.add_argument("eval_set", help="eval set file or stored eval set id, optionally :case_a,case_b")
        parser.add_argument("--config", "--config_file_path", dest="config", help="ADK test_config.json")
        parser.add_argument("--print-detailed-results", "--print_detailed_results", action="store_true",
                            dest="detailed", help="print every case's metrics and invocations")
        parser.add_argument("--repeats", type=int, default=1, help="run each case this many times")
        parser.add_argument("--concurrency", type=int, default=None,
                            help="cases at a time (default: ADKUI_EVAL_CONCURRENCY)")

    def handle(self, *args: Any, agent: str, eval_set: str, config: str | None, detailed: bool,
               repeats: int, concurrency: int | None, **options: Any) -> None:
        if agent not in agent_names():
            raise CommandError(f"No agent named {agent!r} in {settings.ADKUI_AGENTS_DIR}.", returncode=2)
        stored, eval_ids, specs = self._eval_set(agent, eval_set, config)
        self.stdout.write(f"Using evaluation criteria: {json.dumps({'criteria': criteria_of(specs)})}")
        try:
            run = services.eval_run_create(
                eval_set=stored, app_name=agent, specs=specs, eval_ids=eval_ids, repeats=repeats,
                concurrency=concurrency or int(getattr(settings, "ADKUI_EVAL_CONCURRENCY", 1)), source="cli",
                start=False,
            )
        except services.EvalError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        asyncio.run(execute_run(run.pk, worker=WORKER_ID))
        run.refresh_from_db()
        sys.exit(self._report(run, detailed))

    # ---- input ----

    def _eval_set(self, agent: str, target: str, config: str | None) -> tuple[EvalSet, list[str], list[MetricSpec]]:
        path, eval_ids = _split_selection(target)
        if os.path.isfile(path):
            stored = self._import(agent, path)
            config = config or _sibling_config(path)
        else:
            stored = _find(agent, path)
        if config:
            try:
                with open(config, "rb") as f:
                    specs = parse_test_config(content=f.read(), filename=config)
            except OSError as exc:
                raise CommandError(f"Cannot read {config}: {exc}", returncode=2) from exc
            except EvalSetFileError as exc:
                raise CommandError(_problems(exc), returncode=2) from exc
        else:
            specs = specs_from_stored(stored.criteria)
        return stored, eval_ids, specs

    def _import(self, agent: str, path: str) -> EvalSet:
        try:
            with open(path, "rb") as f:
                parsed = parse_eval_set_file(filename=path, content=f.read())
        except EvalSetFileError as exc:
            raise CommandError(_problems(exc), returncode=2) from exc
        return services.eval_set_import(parsed=parsed, app_name=agent, replace=True)

    # ---- output, in adk eval's words ----

    def _report(self, run: EvalRun, detailed: bool) -> int:
        results = list(run.results.prefetch_related("invocations"))
        passed = sum(r.status == EvalCaseResult.PASSED for r in results)
        self.stdout.write(RULE)
        self.stdout.write("Eval Run Summary")
        self.stdout.write(f"{run.eval_set.eval_set_id}:\n  Tests passed: {passed}\n  Tests failed: {len(results) - passed}")
        if run.status != EvalRun.COMPLETED:
            self.stderr.write(f"Run {run.pk} {run.status}: {run.error or f'{run.done} of {run.total} cases ran'}")
        if detailed:
            for result in results:
                self.stdout.write(RULE)
                self._print_result(run, result)
        failed = len(results) - passed
        return 1 if failed or not results or run.status != EvalRun.COMPLETED else 0

    def _print_result(self, run: EvalRun, result: EvalCaseResult) -> None:
        out = self.stdout.write
        out(f"Eval Set Id: {run.eval_set.eval_set_id}")
        out(f"Eval Id: {result.eval_id}" + (f" (repeat {result.repeat + 1})" if run.repeats > 1 else ""))
        out(f"Overall Eval Status: {_adk_status(result.status)}")
        for m in result.metrics:
            out(DASHES)
            out(f"Metric: {m['metric_name']}, Status: {m['status']}, Score: {m['score']}, Threshold: {m['threshold']}")
        if result.error:
            out(DASHES)
            out(f"Error: {result.error.strip()}")
        invocations = list(result.invocations.all())
        if not invocations:
            return
        expected = expected_invocations(result.case_data)
        out(DASHES)
        out("Invocation Details:")
        for row in invocations:
            out(f"\nInvocation {row.index + 1} of {len(invocations)}")
            wanted = expected[row.index] if row.index < len(expected) else None
            for label, value in _invocation_fields(row, wanted):
                _echo_field(out, label, value)
        out("\n")


def _split_selection(target: str) -> tuple[str, list[str]]:
    """`file_or_id:case_a,case_b`, as adk eval reads it (a path that exists wins)."""
    if os.path.isfile(target) or ":" not in target:
        return target, []
    path, _, selection = target.rpartition(":")
    return path, [s.strip() for s in selection.split(",") if s.strip()]


def _sibling_config(path: str) -> str | None:
    # adk eval reads test_config.json beside the eval set file when none is given.
    candidate = os.path.join(os.path.dirname(path), "test_config.json")
    return candidate if os.path.isfile(candidate) else None


def _find(agent: str, key: str) -> EvalSet:
    found = (EvalSet.objects.filter(app_name=agent, eval_set_id=key).first()
             or EvalSet.objects.filter(app_name="", eval_set_id=key).first())
    if found is None and key.isdigit():
        found = EvalSet.objects.filter(pk=int(key)).first()
    if found is None:
        raise CommandError(f"{key!r} is neither a file nor a stored eval set of {agent!r}.", returncode=2)
    return found


def _problems(exc: EvalSetFileError) -> str:
    return f"{exc.filename} is not a valid eval set file:\n" + "\n".join(f"  {p}" for p in exc.problems)


def _adk_status(status: str) -> str:
    return {EvalCaseResult.PASSED: "PASSED", EvalCaseResult.NOT_EVALUATED: "NOT_EVALUATED"}.get(status, "FAILED")


def _format_call(call: dict[str, Any]) -> str:
    args = [f"{k}={v!r}" for k, v in (call.get("args") or {}).items()]
    return f"{call['name']}()" if not args else f"{call['name']}(\n  " + ",\n  ".join(args) + ")"


def _invocation_fields(row: Any, expected: Any) -> list[tuple[str, str]]:
    fields = [("prompt", row.user_text)]
    if expected is not None:
        fields.append(("expected_response", response_text(expected.final_response)))
    fields.append(("actual_response", row.actual_response))
    if expected is not None:
        calls = [{"name": c.name, "args": c.args or {}} for c in tool_calls(expected)]
        fields.append(("expected_tool_calls", "\n".join(_format_call(c) for c in calls)))
    fields.append(("actual_tool_calls", "\n".join(_format_call(c) for c in row.actual_tool_calls)))
    fields += [(m["metric_name"], f"{m['status']} ({m['score']})") for m in row.metrics]
    return fields


def _echo_field(out: Any, label: str, value: str) -> None:
    lines = [w for line in value.splitlines() or ["(none)"] for w in textwrap.wrap(line, 80) or [""]]
    prefix = f"  {label}: ".ljust(30)
    out(f"{prefix}{lines[0]}")
    for line in lines[1:]:
        out(f"{' ' * len(prefix)}{line}")
