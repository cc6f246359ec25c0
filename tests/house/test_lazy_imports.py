"""lazy_imports: URL patterns name their views, which are imported on first use, and then are the
views a plain `path()` would have held; template tags read ADK-backed modules on first use."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import iscoroutinefunction
from django.urls import URLResolver, get_resolver, resolve

from lazy_imports import LazyURLPattern, ViewRef, lazy_path, views_in
from runtime_app import apis as runtime_apis
from runtime_app import views as runtime_views
from sessions_app import apis as session_apis

ROOT = Path(__file__).resolve().parents[2]


def _patterns(resolver: URLResolver):
    for pattern in resolver.url_patterns:
        yield from _patterns(pattern) if isinstance(pattern, URLResolver) else [pattern]


def test_a_function_view_resolves_to_the_function_itself():
    assert resolve("/sessions/7/").func is runtime_views.session_detail


def test_an_async_view_stays_async():
    assert iscoroutinefunction(resolve("/sessions/7/chat/").func)


def test_a_class_based_view_is_made_with_as_view_and_its_initkwargs():
    version = resolve("/api/version").func
    assert version.view_class is runtime_apis.VersionApi and version.cls is runtime_apis.VersionApi
    assert resolve("/api/docs/").func.view_initkwargs == {"url_name": "runtime_api:schema"}


def test_a_view_made_of_several_apis_is_made_of_those_classes():
    sessions = resolve("/api/apps/a/users/u/sessions").func
    assert set(sessions.cls.__bases__) == {session_apis.SessionListApi, session_apis.SessionCreateApi}
    assert sessions.csrf_exempt is True


def test_every_named_view_exists():
    lazy = [p for p in _patterns(get_resolver()) if isinstance(p, LazyURLPattern)]
    assert len(lazy) > 50
    assert all(callable(p.callback) for p in lazy)


def test_initkwargs_for_a_function_view_are_refused_when_it_is_made():
    pattern = lazy_path("x/", ViewRef("runtime_app.views", "session_detail").as_view(a=1), name="x")
    with pytest.raises(TypeError, match="runtime_app.views.session_detail is not a class-based view"):
        pattern.callback  # noqa: B018


def test_views_in_answers_no_dunder():
    with pytest.raises(AttributeError):
        views_in("runtime_app.views").__wrapped__  # noqa: B018


@pytest.mark.slow
def test_the_urlconf_and_the_tag_libraries_import_no_view_nor_adk(tmp_path):
    code = """
import json, sys, django
django.setup()
from django.template import engines
from django.urls import get_resolver, resolve
get_resolver().url_patterns  # the URLconf, as the checks read it
engines["django"].engine  # every tag library, as rendering or checking a template imports them
ours = ("runtime_app.", "eval_app.", "inspector_app.", "memory_app.", "sessions_app.")
imported = lambda: sorted(m for m in sys.modules if m.startswith(ours) and m.endswith((".views", ".apis", ".metrics"))
                          or m.startswith("google.genai"))
before = imported()
from eval_app.templatetags import eval_tags
status = eval_tags.metric_status({"eval_status": 1})
view = resolve("/sessions/3/").func
print(json.dumps({"before": before, "status": status, "after": "eval_app.metrics" in sys.modules,
                  "view": f"{view.__module__}.{view.__name__}"}))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "adkui.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] == []
    assert seen["status"] == "PASSED" and seen["after"] is True  # read on first use
    assert seen["view"] == "runtime_app.views.session_detail"  # imported on first use
