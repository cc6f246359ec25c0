"""`manage.py eval AGENT EVAL_SET`: run an eval set like `adk eval`, for CI.

EVAL_SET is an eval set file (.evalset.json, YAML, legacy .test.json) or the
id of a stored eval set, optionally followed by `:case_a,case_b` as in
`adk eval`. The config is ADK's test_config.json (`--config`, else the one
beside the eval set file, else the set's stored criteria, else ADK's default):
any metric ADK registers, with its options, and `user_simulator_config`.
Everything is checked before anything is stored; a file is then imported
(replacing the cases of a stored set with its id) so its run shows up in the
UI's history. The cases run in this process on ADK's evaluation engine (no
worker needed). Prints what `adk eval` prints (ADK's own printer, on ADK's
results) and exits 1 when any case fails (or none ran), 2 on bad input.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from google.adk.cli.cli_eval import parse_and_get_evals_to_run, pretty_print_eval_result
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus

from sessions_app.runtime import agent_names

from ... import judges, services
from ...apis.adk_results import case_result, eval_set_result
from ...evalset_files import (
    EvalSetFileError,
    ParsedEvalSet,
    parse_eval_config,
    parse_eval_set_file,
    simulator_config_json,
    stored_eval_config,
    stored_eval_metrics,
)
from ...models import EvalRun, EvalSet

SUMMARY_RULE = "*" * 69  # adk eval's rules: 69 stars above the summary, 68 above each case
CASE_RULE = "*" * 68


class Command(BaseCommand):
    help = "Run an eval set against an agent as `adk eval` does; exit 1 when any case fails, 2 on bad input."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", help="agent (app) name, as listed in the agents directory")
        parser.add_argument("eval_set", help="eval set file or stored eval set id, optionally :case_a,case_b")
        parser.add_argument("--config", "--config_file_path", dest="config", help="ADK's test_config.json")
        parser.add_argument("--print-detailed-results", "--print_detailed_results", action="store_true",
                            dest="detailed", help="print every case's metrics and invocations")
        parser.add_argument("--results-json", dest="results_json",
                            help="write ADK's EvalSetResult JSON (as adk eval stores in .adk/eval_history)")
        parser.add_argument("--judge-model", dest="judge_model", default="",
                            help="judge (and user simulator) model for LLM-as-judge metrics; default: ADK's")
        parser.add_argument("--repeats", type=int, default=1, help="run each case this many times")

    def handle(self, *args: Any, agent: str, eval_set: str, config: str | None, detailed: bool,
               results_json: str | None, judge_model: str, repeats: int, **options: Any) -> None:
        if agent not in agent_names():
            raise CommandError(f"No agent named {agent!r} in {settings.ADKUI_AGENTS_DIR}.", returncode=2)
        if repeats < 1:
            raise CommandError("--repeats: must be at least 1.", returncode=2)
        _check_judge_model(judge_model)
        _check_writable(results_json)
        target, eval_ids = _selection(eval_set)
        parsed = _read_eval_set(target) if os.path.isfile(target) else None
        stored = None if parsed else _find(agent, target)
        eval_config, eval_metrics = _config(config or _sibling_config(parsed, target), stored, judge_model)
        _check_selection(parsed, stored, eval_ids)
        self.stdout.write(f"Using evaluation criteria: {eval_config}")
        run = _create_run(agent, parsed, stored, eval_config, eval_metrics, eval_ids=eval_ids,
                          judge_model=judge_model, repeats=repeats)
        run = services.eval_run_execute_inline(run)
        run.refresh_from_db()
        if results_json:
            self._write_results(run, results_json)
        sys.exit(self._report(run, detailed))

    # ---- output, in adk eval's words ----

    def _report(self, run: EvalRun, detailed: bool) -> int:
        rows = list(run.results.all())
        results = [case_result(run, row, None, live=True) for row in rows]
        passed = sum(r.final_eval_status == EvalStatus.PASSED for r in results)
        self.stdout.write(SUMMARY_RULE)
        self.stdout.write("Eval Run Summary")
        if results:
            self.stdout.write(f"{run.eval_set.eval_set_id}:\n  Tests passed: {passed}\n"
                              f"  Tests failed: {len(results) - passed}")
        if run.status != EvalRun.COMPLETED:
            self.stderr.write(f"Run {run.pk} {run.status}: {run.error or f'{run.done} of {run.total} cases ran'}")
        if detailed:
            for row, result in zip(rows, results):
                self.stdout.write(CASE_RULE)
                self.stdout.write(_adk_printed(result), ending="")
                if row.error:
                    self.stdout.write(f"Error: {row.error.strip()}")
        failed = len(results) - passed
        return 1 if failed or not results or run.status != EvalRun.COMPLETED else 0

    def _write_results(self, run: EvalRun, path: str) -> None:
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(eval_set_result(run).model_dump_json(indent=2))
        except OSError as exc:
            raise CommandError(f"--results-json: cannot write {path}: {exc}", returncode=2) from exc
        self.stdout.write(f"Eval results written to {path}")


def _adk_printed(result: Any) -> str:
    """ADK's own detailed printout of one case result (it prints with click.echo)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pretty_print_eval_result(result)
    return out.getvalue()


# ---- input: everything checked before anything is written ----


def _check_judge_model(judge_model: str) -> None:
    if not judge_model:
        return
    try:
        judges.check_model(judge_model)
    except ValueError as exc:
        raise CommandError(f"--judge-model: {exc}", returncode=2) from exc


def _check_writable(path: str | None) -> None:
    folder = os.path.dirname(os.path.abspath(path)) if path else ""
    if path and not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
        raise CommandError(f"--results-json: cannot write into {folder}.", returncode=2)


def _selection(target: str) -> tuple[str, list[str]]:
    """`file_or_id:case_a,case_b`, split as adk eval splits it."""
    [(eval_set, eval_ids)] = parse_and_get_evals_to_run([target]).items()
    return eval_set, eval_ids


def _read_eval_set(path: str) -> ParsedEvalSet:
    try:
        with open(path, "rb") as f:
            return parse_eval_set_file(filename=path, content=f.read())
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc}", returncode=2) from exc
    except EvalSetFileError as exc:
        raise CommandError(_problems("is not a valid eval set file", exc), returncode=2) from exc


def _sibling_config(parsed: ParsedEvalSet | None, path: str) -> str | None:
    """adk eval reads test_config.json beside the eval set file when none is given."""
    if parsed is None:
        return None
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


def _config(path: str | None, stored: EvalSet | None, judge_model: str) -> tuple[EvalConfig, list[EvalMetric]]:
    """ADK's EvalConfig and its EvalMetrics, each metric and option checked by ADK's models and registry."""
    try:
        if path:
            try:
                with open(path, "rb") as f:
                    content = f.read()
            except OSError as exc:
                raise CommandError(f"--config: cannot read {path}: {exc}", returncode=2) from exc
            config, eval_metrics = parse_eval_config(content=content, filename=path, judge_model=judge_model)
        else:
            criteria = stored.criteria if stored else {}
            config = stored_eval_config(criteria, stored.user_simulator_config if stored else None)
            eval_metrics = stored_eval_metrics(criteria, judge_model=judge_model)
    except EvalSetFileError as exc:
        raise CommandError(_problems("is not a valid test config", exc), returncode=2) from exc
    if config.live_model_config is not None:
        raise CommandError(f"{path}: live_model_config: adkui does not run evals on the Live API.", returncode=2)
    if config.custom_metrics:
        raise CommandError(f"{path}: custom_metrics: adkui runs the metrics ADK registers, not custom code.",
                           returncode=2)
    return config, eval_metrics


def _check_selection(parsed: ParsedEvalSet | None, stored: EvalSet | None, eval_ids: list[str]) -> None:
    known = ({c.eval_id for c in parsed.eval_set.eval_cases} if parsed
             else set(stored.cases.values_list("eval_id", flat=True)) if stored else set())
    unknown = [i for i in eval_ids if i not in known]
    if unknown:
        raise CommandError(f"No eval case {', '.join(map(repr, unknown))} in the eval set.", returncode=2)
    if not known:
        raise CommandError("The eval set has no cases to run.", returncode=2)


def _create_run(agent: str, parsed: ParsedEvalSet | None, stored: EvalSet | None, config: EvalConfig,
                eval_metrics: list[EvalMetric], *, eval_ids: list[str], judge_model: str, repeats: int) -> EvalRun:
    """Import the file (if any) and create the run in one transaction: a refusal leaves nothing behind."""
    simulator = simulator_config_json(config)
    try:
        with transaction.atomic():
            if parsed is not None:
                stored = services.eval_set_import(parsed=parsed, app_name=agent, replace=True)
            return services.eval_run_create(
                eval_set=stored, app_name=agent, metrics=eval_metrics, judge_model=judge_model,
                user_simulator_config=simulator, eval_ids=eval_ids, repeats=repeats, source="cli", start=False,
            )
    except services.EvalError as exc:
        raise CommandError(str(exc), returncode=2) from exc


def _problems(what: str, exc: EvalSetFileError) -> str:
    return f"{exc.filename} {what}:\n" + "\n".join(f"  {p}" for p in exc.problems)
