"""Hostile requests over pages and the API: never a 5xx, and a refusal changes nothing.

Each row is one request an adversarial (or merely buggy) client might send.
After each, every table a request could write to has the rows it had before.
The suite runs on SQLite and, in CI, on PostgreSQL, where NUL, lone
surrogates, over-long ids and non-finite numbers used to raise 500s.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from eval_app.evalset_files import MAX_FILE_BYTES
from sessions_app.models import Session

APP, USER, SID = "trip_planner", "u", "s1"
SESSION_API = f"/api/apps/{APP}/users/{USER}/sessions/{SID}"
EVENTS_API = SESSION_API + "/events"
DEEP = "[" * 5000 + "]" * 5000
LONG = "x" * 300
TABLES = ("sessions_app", "memory_app", "eval_app", "inspector_app")

BILLION_LAUGHS = (
    "a: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
)

# Few values (so under the count cap), ~22 MB of text once its aliases expand.
LONG_TEXT_ALIASED = ("eval_set_id: big\nnote: &a " + "x" * 100_000 + "\neval_cases: [" + ", ".join(["*a"] * 220) + "]\n")


def event(**fields: Any) -> str:
    return json.dumps({"author": "x", "content": {"parts": [{"text": "hi"}]}, **fields})


def run(**fields: Any) -> str:
    """A `/api/run(_sse)` body that would run the agent, but for `fields`."""
    message = {"role": "user", "parts": [{"text": "hi"}]}
    return json.dumps({"appName": APP, "userId": USER, "sessionId": SID, "newMessage": message, **fields})


@dataclass
class Hostile:
    name: str
    method: str
    path: str
    body: str | bytes | None = None
    content_type: str = "application/json"
    expect: tuple[int, ...] = (400,)
    names: str | None = None  # a field the refusal must name
    extra: dict[str, Any] = field(default_factory=dict)
    files: dict[str, bytes] | None = None


def _raw(text: str) -> str:
    """JSON text with escapes json.dumps would not write (a lone surrogate, NUL in a key)."""
    return text


HOSTILE = [
    # ---- event ingest: timestamps, ids, text, numbers, nesting, bodies
    Hostile("timestamp 1e308", "POST", EVENTS_API, event(timestamp=1e308), names="timestamp"),
    Hostile("timestamp in milliseconds", "POST", EVENTS_API, event(timestamp=1795364444546), names="timestamp"),
    Hostile("timestamp -1e11", "POST", EVENTS_API, event(timestamp=-1e11), names="timestamp"),
    Hostile("timestamp a string", "POST", EVENTS_API, event(timestamp="soon")),
    Hostile("timestamp 1e400", "POST", EVENTS_API, '{"author": "x", "timestamp": 1e400}', names="timestamp"),
    Hostile("NaN", "POST", EVENTS_API, '{"author": "x", "timestamp": NaN}', names="timestamp"),
    Hostile("Infinity", "POST", EVENTS_API, '{"author": "x", "timestamp": Infinity}', names="timestamp"),
    Hostile("empty body", "POST", EVENTS_API, "", names="body"),
    Hostile("chunked empty body", "POST", EVENTS_API, "", extra={"CONTENT_LENGTH": ""}, names="body"),
    Hostile("not JSON", "POST", EVENTS_API, "{author: x", expect=(400,)),
    Hostile("a JSON array", "POST", EVENTS_API, "[1, 2]"),
    Hostile("not UTF-8", "POST", EVENTS_API, b'{"author": "\xff\xfe"}'),
    Hostile("NUL in text", "POST", EVENTS_API, event(content={"parts": [{"text": "a\u0000b"}]}),
            names="content.parts[0].text"),
    Hostile("NUL in a state key", "POST", EVENTS_API, event(actions={"stateDelta": {"k\u0000": 1}}),
            names="actions.stateDelta"),
    Hostile("lone surrogate", "POST", EVENTS_API, _raw('{"author": "x", "content": {"parts": [{"text": "\\ud800"}]}}'),
            names="content.parts[0].text"),
    Hostile("lone low surrogate in a key", "POST", EVENTS_API, _raw('{"author": "x", "actions": {"stateDelta": {"\\udc00": 1}}}'),
            names="actions.stateDelta"),
    Hostile("nested 5000 deep", "POST", EVENTS_API, '{"author": "x", "customMetadata": {"a": ' + DEEP + "}}", names="body"),
    Hostile("event id over 255", "POST", EVENTS_API, event(id=LONG), names="id"),
    Hostile("author over 255", "POST", EVENTS_API, event(author=LONG), names="author"),
    Hostile("invocation id over 255", "POST", EVENTS_API, event(invocationId=LONG), names="invocationId"),
    Hostile("state key over 255", "POST", EVENTS_API, event(actions={"stateDelta": {LONG: 1}}), names="stateDelta key"),
    Hostile("wrong content type", "POST", EVENTS_API, event(), content_type="text/plain", expect=(415,)),
    # ---- ids in the path and in query strings
    Hostile("NUL in app name", "GET", f"/api/apps/tr%00ip/users/{USER}/sessions/{SID}", names="path"),
    Hostile("NUL in user id", "GET", f"/api/apps/{APP}/users/u%00/sessions/{SID}", names="path"),
    Hostile("NUL in session id", "DELETE", f"/api/apps/{APP}/users/{USER}/sessions/s%001", names="path"),
    Hostile("NUL in page path", "GET", "/apps/trip%00planner/", names="path"),
    Hostile("NUL in ?q", "GET", f"/apps/{APP}/?q=a%00b", names="q"),
    Hostile("NUL in ?user", "GET", f"/apps/{APP}/?user=%00"),
    Hostile("NUL in ?author", "GET", "/sessions/{pk}/?author=%00"),
    Hostile("NUL in ?key", "GET", "/sessions/{pk}/key-history/?key=a%00"),
    Hostile("NUL in a query key", "GET", f"/apps/{APP}/?a%00=1", names="query"),
    Hostile("app name over 255 (list)", "GET", f"/api/apps/{LONG}/users/{USER}/sessions", expect=(200, 404)),
    Hostile("session id over 255 (create)", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            json.dumps({"sessionId": LONG}), names="session_id"),
    Hostile("session id over 255 (create with id)", "POST", f"/api/apps/{APP}/users/{USER}/sessions/{LONG}", "{}",
            names="session_id"),
    Hostile("user id over 255 (create)", "POST", f"/api/apps/{APP}/users/{LONG}/sessions", "{}", names="user_id"),
    Hostile("unknown API route", "GET", "/api/no/such/route", expect=(404,), names="detail"),
    Hostile("unknown session", "GET", f"/api/apps/{APP}/users/{USER}/sessions/nope", expect=(404,), names="detail"),
    Hostile("bad after_seq", "GET", EVENTS_API + "?after_seq=abc", names="after_seq"),
    Hostile("negative state seq", "GET", SESSION_API + "/state?seq=-1", names="seq"),
    Hostile("state seq past the end", "GET", SESSION_API + "/state?seq=99999", expect=(404,)),
    Hostile("limit too large", "GET", EVENTS_API + "?limit=1000000", names="limit"),
    Hostile("page of a missing session", "GET", "/sessions/999999/", expect=(404,)),
    # Past a big integer: the plain statements of a session page (`_page_sql`) would not bind it.
    Hostile("page of a session past any id", "GET", "/sessions/99999999999999999999/", expect=(404,)),
    Hostile("state panel of a session past any id", "GET", "/sessions/99999999999999999999/state/", expect=(404,)),
    Hostile("older events before a seq past any", "GET", "/sessions/{pk}/events/?before=99999999999999999999",
            expect=(200,)),
    Hostile("time travel to a word", "GET", "/sessions/{pk}/?at=abc", expect=(404,)),
    # ---- session create and state
    Hostile("state with NUL", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            json.dumps({"state": {"k": "a\u0000"}}), names="state.k"),
    Hostile("state nested too deep", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            '{"state": {"k": ' + "[" * 150 + "]" * 150 + "}}", names="state.k[0][0][0][0]…"),
    Hostile("state too large", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            json.dumps({"state": {"k": "x" * 5000}}), names="state"),
    Hostile("too many initial events", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            json.dumps({"events": [{"author": "user"}] * 6}), names="events"),
    Hostile("initial event out of time", "POST", f"/api/apps/{APP}/users/{USER}/sessions",
            json.dumps({"events": [{"author": "user", "timestamp": 1e300}]}), names="timestamp"),
    Hostile("create with id: a list", "POST", f"/api/apps/{APP}/users/{USER}/sessions/new", "[1]", names="state"),
    Hostile("PATCH empty body", "PATCH", SESSION_API, "", names="stateDelta"),
    Hostile("PATCH delta not an object", "PATCH", SESSION_API, json.dumps({"stateDelta": [1]}), names="stateDelta"),
    Hostile("PATCH delta too large", "PATCH", SESSION_API, json.dumps({"stateDelta": {"k": "x" * 5000}}),
            names="stateDelta"),
    Hostile("PATCH delta with NUL", "PATCH", SESSION_API, json.dumps({"stateDelta": {"k": "\u0000"}}),
            names="stateDelta.k"),
    Hostile("PATCH key over 255", "PATCH", SESSION_API, json.dumps({"stateDelta": {LONG: 1}}), names="stateDelta key"),
    # ---- runs
    Hostile("run: empty body", "POST", "/api/run", ""),
    Hostile("run: NUL in session id", "POST", "/api/run", json.dumps({"appName": APP, "userId": USER, "sessionId": "s\u0000"}),
            names="sessionId"),
    Hostile("run_sse: nested message", "POST", "/api/run_sse",
            '{"appName": "trip_planner", "userId": "u", "sessionId": "s1", "newMessage": ' + DEEP + "}", names="body"),
    Hostile("run: empty state-delta key", "POST", "/api/run", run(stateDelta={"": 1}), names="stateDelta key"),
    Hostile("run_sse: empty app: key", "POST", "/api/run_sse", run(stateDelta={"app:": 1}), names="stateDelta key"),
    Hostile("run: state-delta key over 255", "POST", "/api/run", run(stateDelta={LONG: 1}), names="stateDelta key"),
    Hostile("run: state delta over ADKUI_MAX_STATE_BYTES", "POST", "/api/run", run(stateDelta={"k": "x" * 5000}),
            expect=(413,), names="stateDelta"),
    Hostile("run_sse: state delta over ADKUI_MAX_STATE_BYTES", "POST", "/api/run_sse",
            run(stateDelta={"user:k": "x" * 5000}), expect=(413,), names="stateDelta"),
    Hostile("run: unknown session", "POST", "/api/run", json.dumps({"appName": APP, "userId": USER, "sessionId": "nope"}),
            expect=(404,)),
    # ---- artifacts and memory
    Hostile("artifact: NUL in name", "POST", SESSION_API + "/artifacts",
            json.dumps({"filename": "a\u0000b", "artifact": {"text": "hi"}}), expect=(400, 422)),
    Hostile("artifact: NUL in metadata", "POST", SESSION_API + "/artifacts",
            json.dumps({"filename": "a.txt", "artifact": {"text": "hi"}, "customMetadata": {"k": "a\u0000"}}),
            expect=(400, 422)),
    Hostile("artifact: surrogate", "POST", SESSION_API + "/artifacts",
            _raw('{"filename": "a.txt", "artifact": {"text": "\\ud800"}}'), expect=(400, 422)),
    Hostile("memory: NUL session id", "PATCH", f"/api/apps/{APP}/users/{USER}/memory", json.dumps({"sessionId": "\u0000"}),
            expect=(400, 404)),
    # ---- pages
    Hostile("create session form: state with NUL", "POST", f"/apps/{APP}/",
            {"user_id": "u2", "state": '{"k": "a\\u0000"}'}, content_type="form", expect=(200, 400)),
    Hostile("create session form: deep state", "POST", f"/apps/{APP}/",
            {"user_id": "u2", "state": '{"k": ' + DEEP + "}"}, content_type="form", expect=(200, 400)),
    Hostile("create session form: id over 255", "POST", f"/apps/{APP}/",
            {"user_id": "u2", "session_id": LONG}, content_type="form", expect=(200, 400)),
    Hostile("chat: state delta with NUL", "POST", "/sessions/{pk}/chat/", {"message": "", "state_delta": '{"k": "\\u0000"}'},
            content_type="form", expect=(200, 400)),
    Hostile("fork from a word", "POST", "/sessions/{pk}/fork/", {"seq": "abc"}, content_type="form", expect=(404,)),
    Hostile("rewind preview of a word", "GET", "/sessions/{pk}/rewind/?seq=abc", expect=(404,)),
    Hostile("eval import: billion laughs", "POST", "/evals/", {"app_name": APP}, content_type="form", expect=(200, 400),
            files={"file": BILLION_LAUGHS.encode()}),
    Hostile("eval import: long text aliased to ~22 MB", "POST", "/evals/", {"app_name": APP}, content_type="form",
            expect=(200, 400), files={"file": LONG_TEXT_ALIASED.encode()}, names=str(MAX_FILE_BYTES)),
    Hostile("eval import: NUL in JSON", "POST", "/evals/", {"app_name": APP}, content_type="form", expect=(200, 400),
            files={"file": b'{"eval_set_id": "a\\u0000", "eval_cases": []}'}),
]


def _counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for label in TABLES for m in apps.get_app_config(label).get_models()}


@pytest.fixture
def session_pk(service, settings) -> int:
    settings.ADKUI_MAX_STATE_BYTES = 4096
    settings.ADKUI_MAX_INITIAL_EVENTS = 5
    service.create_session_sync(app_name=APP, user_id=USER, session_id=SID, state={"k": 1})
    return Session.objects.get(session_id=SID).pk


def _send(client: Client, case: Hostile, pk: int) -> Any:
    path = case.path.replace("{pk}", str(pk))
    if case.content_type == "form":
        data = dict(case.body or {})
        data.update({k: SimpleUploadedFile(f"set{'.yaml' if b'&a' in v else '.json'}", v) for k, v in (case.files or {}).items()})
        return client.post(path, data, **case.extra)
    if case.method == "GET":
        return client.get(path, **case.extra)
    return client.generic(case.method, path, case.body or b"", content_type=case.content_type, **case.extra)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_a_hostile_request_is_refused_cleanly(case: Hostile, session_pk: int) -> None:
    client = Client(raise_request_exception=False)
    before = _counts()
    response = _send(client, case, session_pk)
    assert response.status_code < 500, response.content[:500]
    assert response.status_code in case.expect, (response.status_code, response.content[:500])
    assert _counts() == before, "a refused request changed stored data"
    if case.names:
        if response.get("Content-Type", "").startswith("application/json"):
            assert case.names in response.json(), response.json()
        else:
            assert case.names in response.content.decode(), response.content[:500]


def test_there_are_at_least_sixty() -> None:
    assert len(HOSTILE) >= 60
