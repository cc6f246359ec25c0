"""The demo's own runs print nothing a user cannot act on: no ADK [EXPERIMENTAL] labels, no context-cache
advice for the offline demo agent (nor once per eval case for any agent), no ADK error tracebacks."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_app import adk_logs

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "eval_app" / "demo"
NOISE = ("[EXPERIMENTAL]", "context_cache_config", "Traceback", "ERROR", "Warning")


def _advice(app_name: str) -> logging.LogRecord:
    return logging.LogRecord("google_adk.google.adk.runners", logging.WARNING, __file__, 1,
                             adk_logs.UNCACHED_TRANSFER + " Every transfer ...", (app_name,), None)


def test_cache_advice_is_passed_on_once_per_agent_not_per_eval_case():
    only = adk_logs.CacheAdviceOncePerAgent()
    assert only.filter(_advice("hosted_agent@eval-1-0-0"))
    assert not only.filter(_advice("hosted_agent@eval-1-1-0"))
    assert not only.filter(_advice("hosted_agent"))
    assert only.filter(_advice("other_agent"))
    adk_logs.cache_advice_moot("offline_agent@eval-2-0-0")
    assert not only.filter(_advice("offline_agent"))
    other = logging.LogRecord("google_adk.google.adk.runners", logging.WARNING, __file__, 1, "App name mismatch", (), None)
    assert only.filter(other)


@pytest.mark.slow
def test_loading_the_demo_and_running_its_eval_sets_prints_no_noise(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "adkui.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "ADKUI_MEDIA_ROOT": str(tmp_path / "media")}
    env.pop("ADKUI_DEMO_MODEL", None)
    runs = "".join(
        f"with contextlib.suppress(SystemExit):  # exit 1 when a case fails; what it prints is the point\n"
        f"    call_command('eval', 'trip_planner', {str(DEMO / evalset)!r}, '--config', {str(DEMO / config)!r},"
        " stdout=io.StringIO())\n"
        for evalset, config in [("trip_planner.evalset.json", "test_config.json"),
                                ("judged/trip_planner_judged.evalset.json", "judged/test_config.json"),
                                ("simulated/trip_planner_simulated.evalset.json", "simulated/test_config.json")]
    )
    code = ("import contextlib, io, django; django.setup()\n"
            "from django.core.management import call_command\n"
            "call_command('migrate', verbosity=0)\n"
            "call_command('load_demo', stdout=io.StringIO())\n" + runs)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if any(word in line for word in NOISE)] == []
