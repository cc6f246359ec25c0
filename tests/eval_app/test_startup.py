"""Fresh processes start without ADK's evaluation engine (Vertex AI's SDK), and an eval still finds
adkui's metric and judge in ADK's registries. Each check runs in a new interpreter: in this one,
other tests have imported everything already. (Times are measured by bench/startup_bench.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.core.signals import request_finished

from eval_app import apps as eval_apps
from runtime_app.management.commands import up

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("vertexai", "google.cloud.aiplatform", "google.adk.evaluation.metric_evaluator_registry")
JUDGED = ROOT / "eval_app" / "demo" / "judged"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ, "DJANGO_SETTINGS_MODULE": "adkui.settings", "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "ADKUI_MEDIA_ROOT": str(tmp_path / "media"), **extra,
    }


def _python(code: str, env: dict[str, str]) -> Any:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _manage_py(*args: str, env: dict[str, str]) -> dict:
    """Run `manage.py ARGS` in a fresh interpreter; its exit code, stderr and the modules it imported."""
    return _python(
        "import contextlib, io, json, runpy, sys\n"
        f"sys.argv = ['manage.py', *{list(args)!r}]\n"
        "err, code = io.StringIO(), 0\n"
        "with contextlib.redirect_stderr(err):\n"
        "    try:\n"
        "        runpy.run_path('manage.py', run_name='__main__')\n"
        "    except SystemExit as exit:\n"
        "        code = exit.code\n"
        "print(json.dumps({'code': code, 'stderr': err.getvalue(), 'modules': sorted(sys.modules)}))",
        env,
    )


def test_manage_py_check_imports_no_view_nor_adks_core(tmp_path):
    done = _manage_py("check", env=_env(tmp_path))
    assert done["code"] == 0, done["stderr"]
    assert "eval_app.urls" in done["modules"] and "eval_app.templatetags.eval_tags" in done["modules"]  # checked
    assert "eval_app.views" not in done["modules"]  # named by the URLconf, imported on first use (lazy_imports.py)
    core = ("google.genai", "google.adk.events", "google.adk.evaluation", *HEAVY)
    assert [n for n in done["modules"] if n.startswith(core)] == []


def test_django_setup_imports_no_adk_at_all(tmp_path):
    modules = _python("import django, json, sys; django.setup(); print(json.dumps(sorted(sys.modules)))", _env(tmp_path))
    assert "eval_app.apps" in modules and "eval_app.models" in modules
    assert [n for n in modules if n.startswith(("google.adk", "google.genai"))] == []


def test_up_refuses_before_importing_adk(tmp_path):
    done = _manage_py("up", "0.0.0.0:8999", env=_env(tmp_path, DEBUG="1", ADKUI_LOCAL_DEV="1"))
    assert done["code"] != 0 and "serves only on localhost" in done["stderr"]
    assert [n for n in done["modules"] if n.startswith(("google.adk", "google.genai"))] == []


def test_adks_own_eval_code_in_a_django_process_sees_our_metric_and_judge(tmp_path):
    seen = _python(
        "import json, sys, django; django.setup()\n"
        f"before = [n for n in {HEAVY!r} if n in sys.modules]\n"
        "from google.adk.evaluation.local_eval_service import LocalEvalService\n"  # what every ADK eval imports
        "from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY as r\n"
        "from google.adk.models import LLMRegistry\n"
        "print(json.dumps({'before': before, 'metrics': [i.metric_name for i in r.get_registered_metrics()],\n"
        "                  'judge': LLMRegistry.resolve('adkui-scripted-judge').__name__}))",
        _env(tmp_path),
    )
    assert seen["before"] == []
    assert "final_session_state_match" in seen["metrics"] and seen["judge"] == "ScriptedJudge"


def test_an_eval_run_in_a_fresh_process_scores_our_metric_with_our_judge(tmp_path):
    out = tmp_path / "results.json"
    code = (
        "import io, json, sys, django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        f"before, exit_code = [n for n in {HEAVY!r} if n in sys.modules], 0\n"
        "try:\n"
        f"    call_command('eval', 'trip_planner', {str(JUDGED / 'trip_planner_judged.evalset.json')!r} + ':lisbon_state',"
        f" '--config', {str(JUDGED / 'test_config.json')!r}, '--results-json', {str(out)!r}, stdout=io.StringIO())\n"
        "except SystemExit as exit:\n"
        "    exit_code = exit.code\n"
        "print(json.dumps({'before': before, 'exit_code': exit_code}))"
    )
    assert _python(code, _env(tmp_path)) == {"before": [], "exit_code": 0}
    [case] = json.loads(out.read_text())["eval_case_results"]
    status = {m["metric_name"]: m["eval_status"] for m in case["overall_eval_metric_results"]}
    assert status["final_session_state_match"] == 1  # PASSED: registered, and bound to the case's states
    assert status["rubric_based_final_response_quality_v1"] == 1  # judged by adkui-scripted-judge


def test_a_db_worker_imports_adks_eval_engine_before_its_first_task(tmp_path):
    # --batch with nothing queued: the worker starts and stops without running a task, so the engine
    # is in the process only because the worker imported it from its start (eval_app's db_worker),
    # on the thread waited for here.
    seen = _python(
        "import json, sys, threading, django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        f"before = [n for n in {HEAVY!r} if n in sys.modules]\n"
        "call_command('db_worker', '--batch', '--no-reload', '--no-startup-delay', '--skip-checks')\n"
        "warms = [t for t in threading.enumerate() if t.name == 'warm-eval-engine']\n"
        "for t in warms: t.join()\n"
        "print(json.dumps({'before': before, 'warms': len(warms), 'modules': sorted(sys.modules)}))",
        _env(tmp_path),
    )
    assert seen["before"] == [] and seen["warms"] <= 1  # (ended already on a fast enough machine)
    assert {"eval_app.tasks", "google.adk.evaluation.metric_evaluator_registry"} <= set(seen["modules"])


def test_up_imports_adks_eval_engine_on_a_thread_once_its_first_page_is_served(monkeypatch, db):
    warmed, served = [], []
    monkeypatch.setattr(up, "warm_engine_in_background", lambda: warmed.append(True))
    monkeypatch.setattr(up, "call_command", lambda name, *a, **k: served.append(name))
    monkeypatch.setattr(up, "get_default_application", lambda: None)
    monkeypatch.setattr(up.Command, "start_worker", lambda self: None)
    monkeypatch.setattr(up.signal, "signal", lambda *a: None)
    up.Command().handle(addrport="127.0.0.1:8999", no_demo=True, agents_dir=None)
    assert served == ["migrate", "runserver"] and warmed == []
    request_finished.send(sender=None)
    request_finished.send(sender=None)
    assert warmed == [True]  # after the first page, once


def test_a_case_waits_for_a_warm_of_the_engine_under_way(monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(eval_apps, "warm_engine", lambda: release.wait(10))
    eval_apps.warm_engine_in_background()
    eval_apps.warm_engine_in_background()  # one at a time: this one starts nothing
    waited = threading.Thread(target=eval_apps.wait_for_engine)
    waited.start()
    waited.join(0.3)
    assert waited.is_alive()
    release.set()
    waited.join(5)
    assert not waited.is_alive()
