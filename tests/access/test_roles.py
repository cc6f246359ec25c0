"""Roles on every route: viewer sees, editor changes, admin deletes, superuser does all.

The route table below is checked against the URL resolvers (each route's
methods, as its OPTIONS answer states them), so a new route, or a new method
on an old one, fails here until it has a rule, and each of its writes a probe.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from access.roles import DELETE, EDIT, VIEW, deletes, login_only, permission_needed, reads
from inspector_app.models import ModelCall
from sessions_app.models import Session as SessionRow

from .conftest import DEMO_EVALSET, PASSWORD, SID, USER, World, snapshot

OPEN, LOGIN = "public", "login-only"
G, P = "GET", "POST"
RULES: dict[str, dict[str, str]] = {
    # adkui: no login, any logged-in user, and the API's catch-all 404
    "healthz": {G: OPEN},
    "otlp:traces": {P: EDIT},  # OTLP/HTTP: an exporter sends with an editor's token
    "otlp:logs": {P: EDIT},
    "login": {G: OPEN, P: OPEN, "PUT": OPEN},
    "logout": {P: LOGIN},
    "^api/(?P<rest>.*)$": {G: VIEW, P: EDIT, "PUT": EDIT, "PATCH": EDIT, "DELETE": DELETE},
    # pages
    "runtime:app_list": {G: VIEW},
    "runtime:local_stores": {G: VIEW},
    "runtime:local_import_start": {P: EDIT},
    "runtime:local_import_stop": {P: EDIT},
    "runtime:app_detail": {G: VIEW, P: EDIT},
    "runtime:session_detail": {G: VIEW},
    "runtime:chat_send": {P: EDIT},
    "runtime:chat_stop": {P: EDIT},
    "runtime:rewind_preview": {G: VIEW},
    "runtime:fork_preview": {G: VIEW},
    "runtime:rewind_apply": {P: EDIT},
    "runtime:session_fork": {P: EDIT},
    "runtime:session_reset": {P: EDIT},
    "runtime:replay_start": {P: EDIT},
    "runtime:replay_detail": {G: VIEW},
    "runtime:replay_stop": {P: EDIT},
    "runtime:edit_form": {G: VIEW},
    "runtime:edit_submit": {P: EDIT},
    "runtime:edit_comparison": {G: VIEW},
    "sessions_app:session_events": {G: VIEW},
    "sessions_app:session_state": {G: VIEW},
    "sessions_app:key_history": {G: VIEW},
    "sessions_app:session_delete": {G: VIEW, P: DELETE},
    "sessions_app:event_search": {G: VIEW},
    "eval_app:eval_set_list": {G: VIEW, P: EDIT},
    "eval_app:eval_set_detail": {G: VIEW},
    "eval_app:eval_set_delete": {P: DELETE},
    "eval_app:eval_set_export": {G: VIEW},
    "eval_app:run_create": {P: EDIT},
    "eval_app:case_edit": {G: VIEW, P: EDIT},
    "eval_app:case_delete": {P: DELETE},
    "eval_app:run_detail": {G: VIEW},
    "eval_app:run_stop": {P: EDIT},
    "eval_app:run_resume": {P: EDIT},
    "eval_app:result_detail": {G: VIEW},
    "eval_app:run_compare": {G: VIEW},
    "eval_app:add_session_form": {G: VIEW, P: EDIT},
    "memory_app:artifacts_panel": {G: VIEW},
    "memory_app:artifact_upload": {P: EDIT},
    "memory_app:artifact_delete": {P: DELETE},
    "memory_app:artifact_download": {G: VIEW},
    "memory_app:memory_panel": {G: VIEW},
    "memory_app:memory_add_session": {P: EDIT},
    "memory_app:memory_forget": {P: DELETE},
    "memory_app:conversation": {G: VIEW},
    "inspector_app:event_inspector": {G: VIEW},
    "inspector_app:session_totals": {G: VIEW},
    "inspector_app:invocation_trace": {G: VIEW},
    "inspector_app:model_call": {G: VIEW},
    "inspector_app:tool_call": {G: VIEW},
    # API
    "runtime_api:app-list": {G: VIEW},
    "runtime_api:run": {P: EDIT},
    "runtime_api:run-sse": {P: EDIT},
    "runtime_api:session-stop": {P: EDIT},
    "runtime_api:model-call-continue": {P: EDIT},
    "runtime_api:model-call-list": {G: VIEW},
    "runtime_api:schema": {G: VIEW},
    "runtime_api:docs": {G: VIEW},
    "sessions_api:sessions": {G: VIEW, P: EDIT},
    "sessions_api:session": {G: VIEW, P: EDIT, "PATCH": EDIT, "DELETE": DELETE},
    "sessions_api:session-events": {G: VIEW, P: EDIT},
    "sessions_api:session-state": {G: VIEW},
    "sessions_api:event-search": {G: VIEW},
    "artifact_api_version_metadata": {G: VIEW},
    "artifact_api_versions_metadata": {G: VIEW},
    "artifact_api_version": {G: VIEW},
    "artifact_api_versions": {G: VIEW},
    "artifact_api_detail": {G: VIEW, "DELETE": DELETE},
    "artifact_api_list": {G: VIEW, P: EDIT},
    "memory_api_update": {"PATCH": EDIT},
    "eval_api:eval-sets": {G: VIEW},
    "eval_api:eval-run-create": {P: EDIT},
    "eval_api:eval-run": {G: VIEW},
    "eval_api:eval-run-cancel": {P: EDIT},
    "eval_api:eval-run-resume": {P: EDIT},
    # ADK's own routes adk-web calls (and adk-web itself at /dev-ui/)
    "runtime_api:version": {G: VIEW},
    "runtime_api:health": {G: OPEN},
    "runtime_api:telemetry": {G: VIEW, P: VIEW},  # a POST that stores nothing
    "runtime_api:app-info": {G: VIEW},
    "runtime_api:build-graph": {G: VIEW},
    "runtime_api:build-graph-image": {G: VIEW},
    "runtime_api:graph": {G: VIEW},
    "runtime_api:event-graph": {G: VIEW},
    # refused to all, logged in or not: adkui does not build or deploy agents
    "runtime_api:builder": {G: OPEN}, "runtime_api:deploy-defaults": {G: OPEN},
    "runtime_api:builder-save": {P: OPEN}, "runtime_api:builder-cancel": {P: OPEN}, "runtime_api:deploy": {P: OPEN},
    "inspector_api:session-trace": {G: VIEW},
    "inspector_api:event-trace": {G: VIEW},
    "eval_api:adk-eval-sets": {G: VIEW, P: EDIT},
    "eval_api:adk-eval-sets-legacy": {G: VIEW},
    "eval_api:adk-eval-set": {G: VIEW, "DELETE": DELETE},
    "eval_api:adk-eval-set-legacy": {P: EDIT},
    "eval_api:adk-eval-cases": {G: VIEW},
    "eval_api:adk-eval-case": {G: VIEW, "PUT": EDIT, "DELETE": DELETE},
    "eval_api:adk-eval-case-legacy": {G: VIEW, "PUT": EDIT, "DELETE": DELETE},
    "eval_api:adk-eval-add-session": {P: EDIT},
    "eval_api:adk-eval-add-session-legacy": {P: EDIT},
    "eval_api:adk-eval-run": {P: EDIT},
    "eval_api:adk-eval-run-legacy": {P: EDIT},
    "eval_api:adk-eval-results": {G: VIEW},
    "eval_api:adk-eval-results-legacy": {G: VIEW},
    "eval_api:adk-eval-result": {G: VIEW},
    "eval_api:adk-eval-result-legacy": {G: VIEW},
    "eval_api:adk-metrics-info": {G: VIEW},
    "dev_ui:index": {G: VIEW},
    "dev_ui:runtime-config": {G: VIEW},
    "dev_ui:asset": {G: OPEN},
}
METHODS = (G, P, "PUT", "PATCH", "DELETE")
MISSING = 987654  # a pk no row has
ROLE_PERMISSIONS = {
    "anonymous": set(), None: set(), "viewer": {VIEW}, "editor": {VIEW, EDIT},
    "admin": {VIEW, EDIT, DELETE}, "superuser": {VIEW, EDIT, DELETE},
}


# ---- the routes, from the resolvers ------------------------------------------------


@dataclass
class Route:
    key: str  # its name, or its pattern when it has none
    example: str  # a URL of it, with made-up arguments


def _routes(patterns: list[Any], prefix: str = "", namespace: str = "") -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue  # Django's admin checks staff status and model permissions itself
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            route = prefix + str(pattern.pattern)
            yield Route(f"{namespace}{pattern.name}" if pattern.name else route, "/" + _example(route))


def _example(route: str) -> str:
    route = re.sub(r"<int:\w+>", str(MISSING), route)
    route = re.sub(r"<\w+:\w+>|<\w+>|\(\?P<\w+>[^)]*\)", "x", route)
    return route.replace("^", "").replace("$", "")


def _methods(client: Client, url: str) -> set[str]:
    """The methods a route takes, as its answer to OPTIONS says (all, when it does not say)."""
    allow = client.options(url).headers.get("Allow")
    return {m.strip() for m in allow.split(",")} & set(METHODS) if allow else set(METHODS)


def test_every_route_has_a_rule_for_each_of_its_methods(production, client_as):
    superuser = client_as("superuser")
    routes = list(_routes(get_resolver().url_patterns))
    found = {route.key: _methods(superuser, route.example) for route in routes}
    assert found == {key: set(rules) for key, rules in RULES.items()}


def test_every_write_has_a_probe():
    writes = {(key, method) for key, rules in RULES.items() for method, need in rules.items() if need in (EDIT, DELETE)}
    assert writes == set(PROBES)


# ---- what each write sends ------------------------------------------------------------


@dataclass
class Probe:
    """A request: `send` gives it real ids (refused ones must change nothing) or,
    with `missing`, ids no row has (an allowed one gets past the role check and
    is answered by the view, mostly 404, without running anything)."""

    build: Callable[[World, bool], tuple[str, dict[str, Any]]]
    api: bool = False
    data: Callable[[World], dict[str, Any]] = field(default=lambda w: {})


def _session_page(suffix: str, data: Callable[[World], dict[str, Any]] = lambda w: {}) -> Probe:
    return Probe(lambda w, missing: (f"{MISSING if missing else w.pk}/{suffix}", data(w)), data=data)


def _api(suffix: str, body: Callable[[World], dict[str, Any]] = lambda w: {}) -> Probe:
    def build(w: World, missing: bool) -> tuple[str, dict[str, Any]]:
        return f"/api/apps/{w.app}/users/{w.user}/sessions/{'no-such-session' if missing else w.sid}{suffix}", body(w)

    return Probe(build, api=True)


def _pk_page(path: str, attr: str, data: Callable[[World], dict[str, Any]] = lambda w: {}) -> Probe:
    return Probe(lambda w, missing: (path.format(MISSING if missing else getattr(w, attr)), data(w)))


def _model_call(w: World) -> int:
    """A model call of the world's session (refusals come before the view, so any id is refused alike)."""
    return ModelCall.objects.filter(session_id=w.pk).values_list("pk", flat=True).first() or MISSING


def _upload() -> SimpleUploadedFile:
    return SimpleUploadedFile("note.txt", b"hello", content_type="text/plain")


def _message(w: World) -> dict[str, Any]:
    return {"appName": w.app, "userId": w.user, "sessionId": w.sid,
            "newMessage": {"role": "user", "parts": [{"text": "hi"}]}}


def _adk_eval_probes() -> dict[tuple[str, str], Probe]:
    """ADK's eval routes: the world's demo set and its first case (a missing one is another app's)."""

    def dev(suffix: str, body: Callable[[World], dict[str, Any]] = lambda w: {}) -> Probe:
        return Probe(lambda w, missing: (f"/api/dev/apps/{'no_such_app' if missing else w.app}/{suffix}", body(w)),
                     api=True)

    case = {"evalId": "greeting", "conversation": []}
    add = {"evalId": "from_session", "sessionId": SID, "userId": USER}
    run = {"eval_case_ids": ["greeting"], "eval_metrics": [{"metricName": "response_match_score", "threshold": 0.5}]}
    probes = {
        ("eval_api:adk-eval-sets", P): dev("eval-sets", lambda w: {"eval_set": {"eval_set_id": "new", "eval_cases": []}}),
        ("eval_api:adk-eval-set-legacy", P): dev("eval_sets/new"),
        ("eval_api:adk-eval-set", "DELETE"): dev("eval-sets/trip_planner_demo"),
    }
    for name, path in (("adk-eval-case", "eval-sets/trip_planner_demo/eval-cases/greeting"),
                       ("adk-eval-case-legacy", "eval_sets/trip_planner_demo/evals/greeting")):
        probes[(f"eval_api:{name}", "PUT")] = dev(path, lambda w: case)
        probes[(f"eval_api:{name}", "DELETE")] = dev(path)
    for name, path in (("adk-eval-add-session", "eval-sets/trip_planner_demo/add-session"),
                       ("adk-eval-add-session-legacy", "eval_sets/trip_planner_demo/add_session")):
        probes[(f"eval_api:{name}", P)] = dev(path, lambda w: add)
    for name, path in (("adk-eval-run", "eval-sets/trip_planner_demo/run"),
                       ("adk-eval-run-legacy", "eval_sets/trip_planner_demo/run_eval")):
        probes[(f"eval_api:{name}", P)] = dev(path, lambda w: run)
    return probes


PROBES: dict[tuple[str, str], Probe] = {
    ("^api/(?P<rest>.*)$", method): Probe(lambda w, missing: ("/api/no-such-route", {}), api=True)
    for method in (P, "PUT", "PATCH", "DELETE")
} | {
    # An empty OTLP/JSON export: allowed, it stores nothing.
    ("otlp:traces", P): Probe(lambda w, missing: ("/v1/traces", {}), api=True),
    ("otlp:logs", P): Probe(lambda w, missing: ("/v1/logs", {}), api=True),
    ("runtime:app_detail", P): Probe(lambda w, missing: (
        f"/apps/{'no-such-app' if missing else w.app}/", {"user_id": "new-user", "session_id": "new", "state": "{}"})),
    ("runtime:chat_send", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/chat/", {"message": "hi"})),
    ("runtime:chat_stop", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/chat/stop/", {})),
    ("runtime:rewind_apply", P): Probe(lambda w, missing: (
        f"/sessions/{MISSING if missing else w.pk}/rewind/apply/", {"invocation_id": w.invocation_id})),
    ("runtime:session_fork", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/fork/", {"seq": 1})),
    ("runtime:session_reset", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/reset/", {})),
    ("runtime:replay_start", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/replay/start/", {})),
    ("runtime:replay_stop", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/replay/stop/", {})),
    ("runtime:edit_submit", P): Probe(lambda w, missing: (f"/model-calls/{MISSING if missing else _model_call(w)}/continue/", {})),
    ("runtime_api:model-call-continue", P): Probe(lambda w, missing: (
        f"/api/dev/model-calls/{MISSING if missing else _model_call(w)}/continue", {}), api=True),
    # No agent has an `adk web` store here: an allowed start is answered 400, an allowed stop does nothing.
    ("runtime:local_import_start", P): Probe(lambda w, missing: ("/imports/local/start/", {"app": w.app})),
    ("runtime:local_import_stop", P): Probe(lambda w, missing: ("/imports/local/stop/", {"app": w.app})),
    ("sessions_app:session_delete", P): Probe(lambda w, missing: (f"/sessions/{MISSING if missing else w.pk}/delete/", {})),
    ("eval_app:eval_set_list", P): Probe(lambda w, missing: (
        "/evals/", {} if missing else {"file": SimpleUploadedFile(DEMO_EVALSET.name, DEMO_EVALSET.read_bytes()),
                                       "app_name": w.app, "replace": "on"})),
    ("eval_app:eval_set_delete", P): _pk_page("/evals/sets/{}/delete/", "set_pk"),
    ("eval_app:run_create", P): _pk_page("/evals/sets/{}/runs/", "set_pk", lambda w: {
        "app_name": w.app, "scope": "all", "trajectory": "on", "trajectory_threshold": 1, "match_type": "EXACT",
        "response_threshold": 0.8, "repeats": 1}),
    ("eval_app:case_edit", P): _pk_page("/evals/cases/{}/edit/", "case_pk", lambda w: {
        "eval_id": "renamed", "turn-TOTAL_FORMS": 1, "turn-INITIAL_FORMS": 1, "turn-MIN_NUM_FORMS": 0,
        "turn-MAX_NUM_FORMS": 1000, "turn-0-user_text": "hello"}),
    ("eval_app:case_delete", P): _pk_page("/evals/cases/{}/delete/", "case_pk"),
    ("eval_app:run_stop", P): _pk_page("/evals/runs/{}/stop/", "queued_run_pk"),
    ("eval_app:run_resume", P): _pk_page("/evals/runs/{}/resume/", "stopped_run_pk"),
    ("eval_app:add_session_form", P): _pk_page("/evals/sessions/{}/add/", "pk", lambda w: {
        "new_eval_set_id": "from_sessions", "eval_id": "from_session"}),
    ("memory_app:artifact_upload", P): _pk_page("/memory/sessions/{}/artifacts/upload/", "pk", lambda w: {
        "file": _upload(), "name": "note.txt"}),
    ("memory_app:artifact_delete", P): _pk_page("/memory/sessions/{}/artifacts/delete/", "pk", lambda w: {
        "name": "report.txt"}),
    ("memory_app:memory_add_session", P): _pk_page("/memory/sessions/{}/memory/add/", "pk"),
    ("memory_app:memory_forget", P): _pk_page("/memory/sessions/{}/memory/forget/", "pk", lambda w: {
        "memory_id": w.memory_pk}),
    ("runtime_api:run", P): Probe(lambda w, missing: ("/api/run", _message(w) | (
        {"appName": "no-such-app"} if missing else {})), api=True),
    ("runtime_api:run-sse", P): Probe(lambda w, missing: ("/api/run_sse", _message(w) | (
        {"appName": "no-such-app"} if missing else {})), api=True),
    ("runtime_api:session-stop", P): _api("/stop"),
    ("sessions_api:sessions", P): Probe(lambda w, missing: (
        f"/api/apps/{'no-such-app' if missing else w.app}/users/{w.user}/sessions", {"state": {"k": 2}}), api=True),
    ("sessions_api:session", P): Probe(lambda w, missing: (
        f"/api/apps/{'no-such-app' if missing else w.app}/users/{w.user}/sessions/new-id", {"state": {"k": 2}}), api=True),
    ("sessions_api:session", "PATCH"): _api("", lambda w: {"stateDelta": {"k": 2}}),
    ("sessions_api:session", "DELETE"): _api(""),
    ("sessions_api:session-events", P): _api("/events", lambda w: {
        "author": "script", "invocationId": "inv-9", "actions": {"stateDelta": {"k": 3}}}),
    ("artifact_api_list", P): _api("/artifacts", lambda w: {"filename": "new.txt", "artifact": {"text": "x"}}),
    ("artifact_api_detail", "DELETE"): _api("/artifacts/report.txt"),
    ("memory_api_update", "PATCH"): Probe(lambda w, missing: (
        f"/api/apps/{w.app}/users/{w.user}/memory", {"sessionId": "no-such-session" if missing else w.sid}), api=True),
    ("eval_api:eval-run-create", P): Probe(lambda w, missing: (
        f"/api/evals/sets/{MISSING if missing else w.set_pk}/runs", {}), api=True),
    ("eval_api:eval-run-cancel", P): Probe(lambda w, missing: (
        f"/api/evals/runs/{MISSING if missing else w.queued_run_pk}/cancel", {}), api=True),
    ("eval_api:eval-run-resume", P): Probe(lambda w, missing: (
        f"/api/evals/runs/{MISSING if missing else w.stopped_run_pk}/resume", {}), api=True),
} | _adk_eval_probes()


def send(client: Client, method: str, probe: Probe, w: World, *, missing: bool = False) -> HttpResponse:
    url, data = probe.build(w, missing)
    if probe.api:
        headers = {"Authorization": f"Token {client.token}"} if client.token else {}
        return client.generic(method, url, json.dumps(data), content_type="application/json", headers=headers)
    # Pages are posted as htmx posts them (fragments); the rule is the same for a plain form.
    return client.post(url, data, headers={"HX-Request": "true"})


def refused(response: HttpResponse, role: str, probe: Probe) -> bool:
    if role == "anonymous":
        if probe.api and response.status_code in (401, 403):
            return "credentials were not provided" in response.json()["detail"]
        return response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    if response.status_code != 403:
        return False
    if probe.api:
        return "permission" in response.json()["detail"]
    return b"Not allowed" in response.content


# ---- the matrix ---------------------------------------------------------------------


WRITES = sorted((key, method) for key, method in PROBES)


@pytest.mark.parametrize("key, method", WRITES, ids=[f"{method} {key}" for key, method in WRITES])
def test_each_role_may_do_only_what_its_permissions_allow(production, client_as, world, key, method):
    need, probe = RULES[key][method], PROBES[(key, method)]
    clients = {role: client_as(role) for role in ROLE_PERMISSIONS}
    before = snapshot()
    # Refusals first, on real rows: each must leave every row as it was.
    for role, client in clients.items():
        if need not in ROLE_PERMISSIONS[role]:
            response = send(client, method, probe, world)
            assert refused(response, role or "norole", probe), (role, response.status_code, response.content[:300])
            assert snapshot() == before, f"{role}'s refused {method} changed rows"
    # Then each allowed role gets past the role check, to the view.
    for role, client in clients.items():
        if need in ROLE_PERMISSIONS[role]:
            response = send(client, method, probe, world, missing=True)
            assert response.status_code not in (401, 403), (role, response.status_code, response.content[:300])
            assert not (response.status_code == 302 and "/accounts/login/" in response["Location"]), role


def test_a_user_with_no_role_sees_no_page_and_no_api(production, client_as, world):
    client = client_as(None)
    assert client.get(f"/sessions/{world.pk}/").status_code == 403
    assert client.get("/api/list-apps", headers={"Authorization": f"Token {client.token}"}).status_code == 403
    assert client.get("/api/docs/").status_code == 403


def test_viewers_see_every_page_and_api_read(production, client_as, world):
    client = client_as("viewer")
    urls = [f"/sessions/{world.pk}/", f"/apps/{world.app}/", "/", "/evals/", f"/evals/sets/{world.set_pk}/",
            f"/memory/sessions/{world.pk}/artifacts/", f"/memory/sessions/{world.pk}/conversation/",
            "/api/list-apps", f"/api/apps/{world.app}/users/{world.user}/sessions/{world.sid}", "/api/docs/",
            "/api/schema/", f"/sessions/{world.pk}/delete/"]  # the delete page's GET is only its question
    for url in urls:
        assert client.get(url, headers={"Authorization": f"Token {client.token}"}).status_code == 200, url


def test_a_viewer_cannot_delete_a_session_with_the_plain_form_either(production, client_as, world):
    response = client_as("viewer").post(f"/sessions/{world.pk}/delete/")
    assert response.status_code == 403 and b"Not allowed" in response.content
    assert SessionRow.objects.filter(pk=world.pk).exists()


def test_an_editor_changes_state_but_cannot_delete_the_session(production, client_as, world):
    client = client_as("editor")
    url = f"/api/apps/{world.app}/users/{world.user}/sessions/{world.sid}"
    auth = {"Authorization": f"Token {client.token}"}
    patched = client.patch(url, {"stateDelta": {"k": 42}}, content_type="application/json", headers=auth)
    assert patched.status_code == 200 and patched.json()["state"]["k"] == 42
    refused = client.delete(url, headers=auth)
    assert refused.status_code == 403 and "delete" in refused.json()["detail"]
    assert client.post(f"/sessions/{world.pk}/delete/").status_code == 403
    assert SessionRow.objects.filter(pk=world.pk).exists()


def test_an_admin_deletes_a_session_from_the_page_and_the_api(production, client_as, world, service):
    client = client_as("admin")
    response = client.post(f"/sessions/{world.pk}/delete/")
    assert response.status_code == 302 and not SessionRow.objects.filter(pk=world.pk).exists()
    service.create_session_sync(app_name=world.app, user_id=world.user, session_id="other")
    url = f"/api/apps/{world.app}/users/{world.user}/sessions/other"
    assert client.delete(url, headers={"Authorization": f"Token {client.token}"}).status_code in (200, 204)
    assert not SessionRow.objects.filter(session_id="other").exists()


def test_any_logged_in_user_may_log_out(production, client_as):
    client = client_as(None)
    assert client.post("/accounts/logout/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_local_dev_needs_no_login_and_no_role(client, world):
    assert client.patch(f"/api/apps/{world.app}/users/{world.user}/sessions/{world.sid}",
                       {"stateDelta": {"k": 5}}, content_type="application/json").status_code == 200
    assert client.post(f"/sessions/{world.pk}/delete/").status_code == 302


def test_a_refused_api_request_says_why_in_json(production, client_as, world):
    client = client_as("viewer")
    response = client.delete(f"/api/apps/{world.app}/users/{world.user}/sessions/{world.sid}",
                             headers={"Authorization": f"Token {client.token}"})
    assert response.status_code == 403
    assert response.json() == {"detail": "Your role does not allow this: it needs the 'access.delete' permission "
                                          "(the 'admin' group or above)."}


# ---- the groups and the rule -----------------------------------------------------------


def test_the_groups_hold_their_permissions(roles):
    def perms(name: str) -> set[str]:
        return {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name=name).permissions.all()}

    assert perms("viewer") == {VIEW}
    assert perms("editor") == {VIEW, EDIT}
    assert {VIEW, EDIT, DELETE, "auth.change_user", "auth.add_user", "authtoken.add_token"} <= perms("admin")


def test_the_grant_role_command_sets_groups_and_staff(make_user):
    user = make_user(None)
    call_command("grant_role", user.username, "admin")
    user.refresh_from_db()
    assert user.is_staff and [g.name for g in user.groups.all()] == ["admin"]
    call_command("grant_role", user.username, "viewer")
    user.refresh_from_db()
    assert not user.is_staff and [g.name for g in user.groups.all()] == ["viewer"]


def test_the_rule_picks_the_permission_from_the_method_and_the_marker():
    def plain() -> None: ...

    assert [permission_needed(m, plain) for m in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")] == [
        VIEW, VIEW, VIEW, EDIT, EDIT, EDIT, DELETE]
    assert permission_needed("POST", deletes(lambda: None)) == DELETE
    assert permission_needed("POST", reads(lambda: None)) == VIEW
    assert permission_needed("POST", login_only(lambda: None)) is None
