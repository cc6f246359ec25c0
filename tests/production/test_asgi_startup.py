"""Importing the ASGI application (what uvicorn and daphne do at start) loads the
URLconf and every view it names (lazy_imports.py) too, before freezing: the first
request no longer imports every view and API module (seconds), and those objects
are frozen with the rest."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings

PROBE = """
import gc, json, sys
before = set(sys.modules)
import adkui.asgi
from django.urls import URLResolver, get_resolver
from lazy_imports import LazyURLPattern
def patterns(resolver):
    for p in resolver.url_patterns:
        yield from patterns(p) if isinstance(p, URLResolver) else [p]
lazy = [p for p in patterns(get_resolver()) if isinstance(p, LazyURLPattern)]
print(json.dumps({"urlconf": "%s" in sys.modules, "frozen": gc.get_freeze_count(),
                  "lazy": len(lazy), "unloaded": [p.lookup_str for p in lazy if not p.loaded],
                  "api_modules": sorted(m for m in sys.modules if m.endswith(".apis") and m not in before)}))
"""


def test_importing_the_asgi_application_loads_the_urlconf_before_freezing(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "adkui.settings", "DEBUG": "0",
           "SECRET_KEY": "test-only-" + "x" * 50, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("REDIS_URL", None)
    out = subprocess.run([sys.executable, "-c", PROBE % settings.ROOT_URLCONF], env=env, cwd=settings.BASE_DIR,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    probe = json.loads(out.strip().splitlines()[-1])
    assert probe["urlconf"] is True
    assert "runtime_app.apis" in probe["api_modules"]  # a view module only the URLconf names
    assert probe["lazy"] > 50 and probe["unloaded"] == []
    assert probe["frozen"] > 100_000
