"""Scale benchmark: stores of many sessions, DjangoSessionService beside ADK's own services.

For each size (--sizes, sessions in one app over sessions/--per-user users,
--events each, every event with a state delta in every scope, one session in
twenty with an error event) the same generated data fills three stores:

- ours, through the write path itself (`sessions_app.generated.fill`:
  `services.session_create` and `services.event_append`, many sessions per
  transaction: the rows are those any append writes, only the commits are
  fewer);
- ADK's `SqliteSessionService`, rows written straight into its tables as its
  own create/append write them (one transaction);
- ADK's `DatabaseSessionService`, rows built by ADK's own storage classes
  (`StorageEvent.from_event` ...) and added in one transaction.

Ours also gets what ADK's session services do not keep: artifacts through
`memory_app.services.artifact_save` (two versions of a note in one session in
ten, an image in one in a hundred, a profile for every user) and an eval set
of 50 cases with a history of 200 completed runs, each result linked to a
session of the store (rows as the engine leaves them, ADK's own case and
metric results).

Before timing, a sample of sessions is read back from all three stores
through each service's `get_session`: state and events must be equal, and the
bulk-written ADK stores must equal stores of the same calls made through
ADK's own API, or the bench stops.

Then, per size and in the same run: `list_sessions` for the app and for one
user, `create_session`, `get_session` (recent 50), `append_event`, each the
median wall time and process CPU time (all threads) of --repeat calls; and
the server time (Django test Client, DEBUG=0, a logged-in editor, in a child
process started as the server is: `adkui.asgi` imported) of the home
page, the app page (default, sorted by health, "needs attention", one user),
a session page and its artifacts panel, search, key history (a `user:` and an
`app:` key), the state as of a session's first event, the eval set's
history and its newest run, and the API's session lists (ADK's and paged) and
artifact list.

    python bench/scale_bench.py [--sizes 1000,10000] [--events 5] [--per-user 50] [--repeat 15]
                                [--bulk] [--store DIR] [--appends 200] [--append-rounds 5]

Ours runs on a fresh SQLite file, or DATABASE_URL (PostgreSQL: a database the
bench may fill; ADK's DatabaseSessionService then runs on the same server,
in a schema of its own tables). `--bulk` fills ours with the bulk builder
(`generated.bulk_fill`, the write path's rows many sessions to a statement;
tests/sessions_app/test_generated_bulk.py holds them equal) instead of the
write path itself. `--store DIR` keeps the SQLite files there and reuses a
store that holds a size's sessions already (ours, each of ADK's), so a second
run times without filling again; a store only partly filled is an error.
ADK's stores are filled --chunk sessions at a time.

Append throughput (--appends events, one after another, to a new session) is
timed in the filled store and in an empty one (a fresh SQLite file, or on
PostgreSQL the database `<name>_empty`, dropped and made again), each in a
child process of its own, --append-rounds times each in turn (the median of
each), and the targets of #27 are printed as met or not.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _store_dir() -> Path:
    """--store, read before Django is set up (ours defaults to a SQLite file in it)."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--store")
    folder = early.parse_known_args()[0].store
    if folder is None:
        return Path(tempfile.mkdtemp(prefix="adkui-scale-"))
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder).resolve()


TMP = _store_dir()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ["DEBUG"] = "0"  # DEBUG records every query: not what a deployment runs
os.environ["ADKUI_LOCAL_DEV"] = "0"
SERVER_DB_POOL = os.environ.get("DB_POOL")  # the pages' child runs as the server does: pooled unless told
os.environ.setdefault("DB_POOL", "0")  # the test Client and the bench share this thread's connection
os.environ.setdefault("ADKUI_MEDIA_ROOT", str(TMP / "media"))  # artifact payloads, kept with the store

import django  # noqa: E402
import psycopg  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions import Session  # noqa: E402
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig  # noqa: E402
from google.adk.sessions.database_session_service import DatabaseSessionService  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.adk.sessions.state import State  # noqa: E402

from adkui.adk import DjangoSessionService  # noqa: E402
from sessions_app.generated import BASE_TIME, bulk_fill, fill  # noqa: E402
from sessions_app.generated import GeneratedApp as Spec  # noqa: E402
from sessions_app.models import Session as SessionRow  # noqa: E402
from sessions_app.services import session_create  # noqa: E402
from eval_app import metrics as eval_metrics  # noqa: E402
from eval_app import scores  # noqa: E402
from eval_app.models import EvalCase, EvalCaseResult, EvalRun, EvalSet  # noqa: E402
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase  # noqa: E402
from google.adk.evaluation.eval_case import Invocation  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetricResult, EvalStatus  # noqa: E402
from google.genai import types  # noqa: E402
from memory_app.models import Artifact  # noqa: E402
from memory_app.naming import artifact_key  # noqa: E402
from memory_app.services import artifact_save  # noqa: E402
from sqlalchemy import func, insert, select  # noqa: E402
from sqlalchemy import inspect as sa_inspect  # noqa: E402

SAMPLE = 3  # sessions read back from every store before timing
RUN = f"{int(time.time()):x}"  # this run's new sessions and events, apart from an earlier run's in a reused store
GENERATED_IDS = "s-%"  # what `GeneratedApp.session_id` gives: the bench's own new sessions are not counted
PAGE_LIMIT_MS = 150.0
SESSION_PAGE_CPU_MS = 10.0  # #27: the session page's first screen, in CPU time


def analyze() -> None:
    """Planner statistics of every store before timing reads (ADK's on the same PostgreSQL server
    too): SQLite gathers them only when asked (`ANALYZE`, which the bulk builder runs). On
    PostgreSQL a `VACUUM (ANALYZE)`, what autovacuum does within a minute of this many inserts on
    a server where it is on (this machine's has it off): it also marks the new rows' pages
    all-visible, without which counts read every row besides their index."""
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)" if connection.vendor == "postgresql" else "ANALYZE")


def adk_database_url() -> str:
    """ADK's DatabaseSessionService beside ours: the same PostgreSQL server, or a SQLite file in the store folder."""
    url = os.environ["DATABASE_URL"]
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return f"sqlite+aiosqlite:///{TMP / 'adk_db.db'}"


# ---- the data ---------------------------------------------------------------


@dataclass
class Built:
    """What the generated calls leave in ADK's tables (applied as ADK applies deltas)."""

    app_state: dict[str, Any] = field(default_factory=dict)
    user_states: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: list[tuple[str, str, dict[str, Any], float, float, list[Event]]] = field(default_factory=list)


def scoped(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    app = {k.removeprefix(State.APP_PREFIX): v for k, v in delta.items() if k.startswith(State.APP_PREFIX)}
    user = {k.removeprefix(State.USER_PREFIX): v for k, v in delta.items() if k.startswith(State.USER_PREFIX)}
    own = {k: v for k, v in delta.items() if not k.startswith((State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX))}
    return app, user, own


def build(spec: Spec, indexes: range, built: Built) -> Built:
    """`built`'s shared scopes carried on over `indexes`, and those sessions' rows (only theirs)."""
    built.sessions = []
    for s in indexes:
        app, user, own = scoped(spec.initial_state(s))
        built.app_state.update(app)
        built.user_states.setdefault(spec.user(s), {}).update(user)
        events = [spec.event(s, i) for i in range(spec.events)]
        for event in events:
            app, user, own_delta = scoped(event.actions.state_delta)
            built.app_state.update(app)
            built.user_states[spec.user(s)].update(user)
            own.update(own_delta)
        created = BASE_TIME + s * 10 - 1
        built.sessions.append((spec.user(s), spec.session_id(s), own, created, events[-1].timestamp, events))
    return built


# ---- filling the three stores --------------------------------------------------


def fill_adk_sqlite(path: Path, spec: Spec, built: Built, *, last: bool) -> None:
    """ADK SqliteSessionService's rows, as its create_session and append_event write them
    (the sessions of `built`; the shared scopes once `last`)."""
    db = sqlite3.connect(path)
    with db:
        if last:
            db.execute("INSERT OR REPLACE INTO app_states VALUES (?, ?, ?)",
                       (spec.app, json.dumps(built.app_state), BASE_TIME))
            db.executemany("INSERT OR REPLACE INTO user_states VALUES (?, ?, ?, ?)",
                           [(spec.app, u, json.dumps(st), BASE_TIME) for u, st in built.user_states.items()])
        db.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                       [(spec.app, u, sid, json.dumps(st), c, up) for u, sid, st, c, up, _ in built.sessions])
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (e.id, spec.app, u, sid, e.invocation_id, e.timestamp, e.model_dump_json(exclude_none=True))
            for u, sid, _, _, _, events in built.sessions for e in events
        ])
    db.close()


async def fill_adk_database(service: DatabaseSessionService, spec: Spec, built: Built, *, last: bool) -> None:
    """ADK DatabaseSessionService's rows, built by its own storage classes (as `fill_adk_sqlite`)."""
    schema = service._get_schema_classes()
    naive = service._uses_naive_datetime()

    def stamp(ts: float) -> datetime:
        moment = datetime.fromtimestamp(ts, tz=timezone.utc)
        return moment.replace(tzinfo=None) if naive else moment

    async with service.database_session_factory() as db:
        if last:
            db.add(schema.StorageAppState(app_name=spec.app, state=built.app_state, update_time=stamp(BASE_TIME)))
            db.add_all([schema.StorageUserState(app_name=spec.app, user_id=u, state=st, update_time=stamp(BASE_TIME))
                        for u, st in built.user_states.items()])
        sessions, events = [], []
        for u, sid, st, created, updated, own in built.sessions:
            sessions.append(schema.StorageSession(app_name=spec.app, user_id=u, id=sid, state=st,
                                                  create_time=stamp(created), update_time=stamp(updated)))
            stub = Session(app_name=spec.app, user_id=u, id=sid)
            events += [schema.StorageEvent.from_event(stub, e) for e in own]
        # The rows of ADK's own objects, inserted as many rows to a statement (the unit of work
        # took minutes a thousand sessions on aiosqlite).
        for rows in (sessions, events):
            if rows:
                await db.execute(insert(type(rows[0])), [column_values(row) for row in rows])
        await db.commit()


def column_values(row: Any) -> dict[str, Any]:
    return {column.key: getattr(row, column.key) for column in sa_inspect(row).mapper.column_attrs}


def adk_sqlite_count(path: Path, app: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT COUNT(*) FROM sessions WHERE app_name = ? AND id LIKE ?", (app, GENERATED_IDS)).fetchone()[0]
    finally:
        db.close()


async def adk_database_count(service: DatabaseSessionService, app: str) -> int:
    table = service._get_schema_classes().StorageSession
    async with service.database_session_factory() as db:
        return await db.scalar(select(func.count()).select_from(table).where(
            table.app_name == app, table.id.like(GENERATED_IDS)))


def ours_count(app: str) -> int:
    return SessionRow.objects.filter(app__name=app, session_id__startswith=GENERATED_IDS[:-1]).count()


def to_fill(name: str, count: int, spec: Spec) -> bool:
    """Whether a store must be filled: empty yes, full no (reused), anything else is an error."""
    if count == spec.sessions:
        print(f"{name}: reusing the {count} sessions it holds")
        return False
    if count:
        sys.exit(f"{name} holds {count} of the {spec.sessions} sessions of {spec.app}: partly filled; "
                 "remove it (or that app's rows) and run again")
    return True


def fill_ours(spec: Spec, bulk: bool) -> float:
    start = time.perf_counter()
    if bulk:
        bulk_fill(spec, range(spec.sessions), defer_indexes=True)
    else:
        fill(spec, range(spec.sessions))
    return time.perf_counter() - start


# ---- artifacts and eval history (ours only: ADK's session services keep neither) --

ARTIFACT_EVERY = 10  # one session in ten has artifacts (session 1, the one whose page is timed, among them)
IMAGE_EVERY = 100  # and one in a hundred an image too
EVAL_SET, EVAL_CASES, EVAL_RUNS = "scale_set", 50, 200
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                      "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def fill_artifacts(spec: Spec) -> int:
    """Artifacts through the write path (`memory_app.services.artifact_save`): two versions of a
    note in one session in ten, an image in one in a hundred, and a profile for every user."""
    saved = 0
    sessions = range(1, spec.sessions, ARTIFACT_EVERY)
    for start in range(0, len(sessions), 500):
        with transaction.atomic():  # 500 sessions to a commit, as the fill of the sessions
            for s in sessions[start:start + 500]:
                key = artifact_key(app_name=spec.app, user_id=spec.user(s), session_id=spec.session_id(s),
                                   filename="notes.md")
                for version in range(2):
                    artifact_save(key=key, part=types.Part(text=f"# Notes {version} of session {s}\n\nanswer {s}"))
                if s % IMAGE_EVERY == 1:
                    image = artifact_key(app_name=spec.app, user_id=spec.user(s), session_id=spec.session_id(s),
                                         filename="chart.png")
                    artifact_save(key=image, part=types.Part.from_bytes(data=PIXEL, mime_type="image/png"))
                saved += 2 + (s % IMAGE_EVERY == 1)
    with transaction.atomic():
        for u in range(spec.users):
            key = artifact_key(app_name=spec.app, user_id=f"user-{u}", session_id=None, filename="user:profile.json")
            artifact_save(key=key, part=types.Part.from_bytes(data=json.dumps({"user": u}).encode(),
                                                              mime_type="application/json"))
            saved += 1
    return saved


def fill_evals(spec: Spec) -> EvalSet:
    """An eval set of the app with EVAL_CASES cases and a history of EVAL_RUNS completed runs, each
    result of a session of the store, the rows as the engine leaves them: ADK's own case and metric
    results, each run's means stored as it ends."""
    eval_set = EvalSet.objects.create(app_name=spec.app, eval_set_id=EVAL_SET, name="scale history")
    ask = lambda text: types.Content(role="user", parts=[types.Part(text=text)])  # noqa: E731
    cases = [AdkEvalCase(eval_id=f"case-{c}", conversation=[Invocation(
        invocation_id=f"inv-{c}", user_content=ask(f"question {c}"),
        final_response=types.Content(role="model", parts=[types.Part(text=f"answer {c}")]))]) for c in range(EVAL_CASES)]
    rows = EvalCase.objects.bulk_create(EvalCase(eval_set=eval_set, eval_id=case.eval_id, position=c,
                                                 data=case.model_dump(mode="json")) for c, case in enumerate(cases))
    metric = eval_metrics.eval_metrics({"response_match_score": 0.8})
    sessions = list(SessionRow.objects.filter(app__name=spec.app).order_by("pk").values_list("pk", "user_id", "session_id")
                    [:EVAL_RUNS * EVAL_CASES])
    for r in range(EVAL_RUNS):
        with transaction.atomic():
            outcomes = [(r * 7 + c) % 10 for c in range(EVAL_CASES)]  # a score in tenths, a few failing
            passed = sum(o >= 8 for o in outcomes)
            run = EvalRun.objects.create(
                eval_set=eval_set, app_name=spec.app, metrics=[m.model_dump(mode="json") for m in metric],
                eval_ids=[case.eval_id for case in cases], status=EvalRun.COMPLETED, total=EVAL_CASES,
                done=EVAL_CASES, passed=passed, failed=EVAL_CASES - passed, started_at=datetime.now(timezone.utc),
                finished_at=datetime.now(timezone.utc))
            results = []
            for c, (case, row, outcome) in enumerate(zip(cases, rows, outcomes)):
                status = EvalStatus.PASSED if outcome >= 8 else EvalStatus.FAILED
                result = EvalMetricResult(metric_name="response_match_score", threshold=0.8, score=outcome / 10,
                                          eval_status=status)
                pk, user_id, session_id = sessions[(r * EVAL_CASES + c) % len(sessions)]
                results.append(EvalCaseResult(
                    run=run, case=row, eval_id=case.eval_id, position=c, case_data=row.data,
                    status=EvalCaseResult.PASSED if outcome >= 8 else EvalCaseResult.FAILED,
                    metrics=[result.model_dump(mode="json")], session_id=pk, user_id=user_id,
                    adk_session_id=session_id, agent_seconds=0.5, seconds=0.6))
            EvalCaseResult.objects.bulk_create(results)
            EvalRun.objects.filter(pk=run.pk).update(metric_means=scores.metric_means([run.pk]).get(run.pk, {}))
    return eval_set


def fill_extras(spec: Spec) -> EvalSet:
    """Artifacts and the eval history, unless the store holds them already (a reused store)."""
    found = EvalSet.objects.filter(app_name=spec.app, eval_set_id=EVAL_SET).first()
    if found is not None:
        print(f"ours: reusing its artifacts ({Artifact.objects.filter(app_name=spec.app).count()}) "
              f"and eval history ({found.runs.count()} runs)")
        return found
    began = time.perf_counter()
    saved = fill_artifacts(spec)
    eval_set = fill_evals(spec)
    print(f"ours: {saved} artifact versions and {EVAL_RUNS} eval runs of {EVAL_CASES} cases "
          f"in {time.perf_counter() - began:.0f} s")
    return eval_set


async def fill_adk(stores: dict[str, BaseSessionService], spec: Spec, chunk: int, sqlite_path: Path) -> None:
    """ADK's two stores (those still empty), `chunk` sessions generated and written at a time."""
    database = stores["ADK DatabaseSessionService"]
    assert isinstance(database, DatabaseSessionService)
    sqlite_empty = to_fill("ADK SqliteSessionService", adk_sqlite_count(sqlite_path, spec.app), spec)
    database_empty = to_fill("ADK DatabaseSessionService", await adk_database_count(database, spec.app), spec)
    if not (sqlite_empty or database_empty):
        return
    built, started = Built(), time.perf_counter()
    for start in range(0, spec.sessions, chunk):
        build(spec, range(start, min(start + chunk, spec.sessions)), built)
        last = start + chunk >= spec.sessions
        if sqlite_empty:
            fill_adk_sqlite(sqlite_path, spec, built, last=last)
        if database_empty:
            await fill_adk_database(database, spec, built, last=last)
    print(f"ADK's stores filled in {time.perf_counter() - started:.0f} s")


async def fill_through_api(service: BaseSessionService, spec: Spec, indexes: range) -> None:
    for s in indexes:
        session = await service.create_session(app_name=spec.app, user_id=spec.user(s), session_id=spec.session_id(s),
                                               state=spec.initial_state(s))
        for i in range(spec.events):
            await service.append_event(session, spec.event(s, i))


def comparable(session: Session | None) -> tuple:
    assert session is not None
    return session.state, [e.model_dump(mode="json", exclude_none=True) for e in session.events]


async def verify(stores: dict[str, BaseSessionService], spec: Spec) -> None:
    """The sample reads back the same from every store, and the bulk-written ADK stores
    the same as ADK's own API writes them (a small app of the same generated sessions)."""
    sample = [spec.session_id(s) for s in range(SAMPLE)]
    seen: dict[str, list[tuple]] = {}
    for name, service in stores.items():
        seen[name] = [comparable(await service.get_session(app_name=spec.app, user_id=spec.user(s), session_id=sid))
                      for s, sid in enumerate(sample)]
    first = next(iter(seen.values()))
    for name, got in seen.items():
        if got != first:
            sys.exit(f"{name}'s store reads back differently from the others: the bench's fill is wrong")
    check = Spec(f"{spec.app}-api-{RUN}", SAMPLE, spec.users, spec.events)
    for name in ("ADK SqliteSessionService", "ADK DatabaseSessionService"):
        service = stores[name]
        await fill_through_api(service, check, range(SAMPLE))
        via_api = [comparable(await service.get_session(app_name=check.app, user_id=check.user(s),
                                                        session_id=check.session_id(s))) for s in range(SAMPLE)]
        # The same calls differ only in what the app's whole history put in the shared scopes.
        for (api_state, api_events), (bulk_state, bulk_events) in zip(via_api, seen[name]):
            own = {k: v for k, v in api_state.items() if not k.startswith((State.APP_PREFIX, State.USER_PREFIX))}
            if api_events != bulk_events or own != {k: bulk_state[k] for k in own}:
                sys.exit(f"{name}: the bulk-written rows differ from what its own API writes")


# ---- timing --------------------------------------------------------------------


def median_times(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in samples) * 1e3, statistics.median(c for _, c in samples) * 1e3


async def timed_in_turn(calls: dict[str, Callable[[int], Awaitable[Any]]], repeat: int,
                        *, warm: bool = True) -> dict[str, tuple[float, float]]:
    """Median wall and CPU (process, all threads) milliseconds of `repeat` calls of each service,
    the services taking turns call by call: a slow spell of the machine (seconds long on some
    machines here, a call's time up by half) then falls on all of them alike, not on whichever
    service's series it hit, so their ratios hold from run to run. With `warm`, each timed call
    comes right after an untimed one of the same service, as in a server that runs only its
    own: timed straight after another service's, a call found the processor's caches full of
    that one's code and data (one user's list 0.49 -> 0.56 ms after ADK's SQLite service's).
    One untimed call each first, whatever `warm` (every service's first call reads its pages
    from the disk's cache)."""
    for call in calls.values():
        await call(-1)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    for i in range(repeat):
        for name, call in calls.items():
            if warm:
                await call(-2 - i)
            wall, cpu = time.perf_counter(), time.process_time()
            await call(i)
            samples[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: median_times(taken) for name, taken in samples.items()}


def app_repeat(repeat: int) -> int:
    """Calls of a whole app's list (seconds each for ADK's services at 100 000 sessions)."""
    return max(3, min(5, repeat // 3))


async def service_calls(service: BaseSessionService, spec: Spec, tag: str) -> dict[str, Callable[[int], Awaitable[Any]]]:
    """The calls timed of a service, after warming it up as a server would be."""
    app, user, target = spec.app, spec.user(1), spec.session_id(1)
    recent = GetSessionConfig(num_recent_events=50)
    tag = f"{tag}-{RUN}"
    appended = await service.create_session(app_name=app, user_id=spec.user(2), session_id=f"append-{tag}")
    late = time.time()
    # A server's steady state: every call but the whole app's list 32 times at once, untimed, so
    # that every thread of a service's pool has opened its connection and run each statement
    # (ours: ADKUI_SESSION_THREADS threads, each its own connection, on which PostgreSQL prepares
    # a statement at its first run; a sequential series alone leaves threads to do that in the
    # middle of it, timed).
    warm = [await service.create_session(app_name=app, user_id=spec.user(2), session_id=f"warm-{tag}-{i}")
            for i in range(32)]
    await asyncio.gather(*(service.get_session(app_name=app, user_id=user, session_id=target, config=recent)
                           for _ in range(32)))
    await asyncio.gather(*(service.list_sessions(app_name=app, user_id=user) for _ in range(32)))
    await asyncio.gather(*(service.create_session(app_name=app, user_id=spec.user(2), session_id=f"warm-new-{tag}-{i}")
                           for i in range(32)))
    await asyncio.gather(*(service.append_event(session, Event(author="user", invocation_id="warm"))
                           for session in warm))

    appends = itertools.count()

    async def append(i: int) -> None:  # numbered in call order, warm-up calls too: the times only grow
        n = next(appends)
        event = spec.event(2, n)
        event.id, event.timestamp = f"bench-{tag}-{n}", late + n
        await service.append_event(appended, event)

    return {
        "list_sessions (app)": lambda i: service.list_sessions(app_name=app),
        "list_sessions (user)": lambda i: service.list_sessions(app_name=app, user_id=user),
        # Of another user: the listed one keeps its --per-user sessions, run after run on a kept store.
        "create_session": lambda i: service.create_session(
            app_name=app, user_id=spec.user(2), session_id=f"new-{tag}-{i}", state={"a": i, "user:b": i, "app:c": i}),
        "get_session (recent 50)": lambda i: service.get_session(app_name=app, user_id=user, session_id=target, config=recent),
        "append_event": append,
    }


async def time_services(stores: dict[str, BaseSessionService], spec: Spec, repeat: int) -> dict[str, dict[str, tuple[float, float]]]:
    """Each call of every service (see `timed_in_turn`), warmed up first, all of them."""
    calls = {name: await service_calls(service, spec, name[:3]) for name, service in stores.items()}
    results: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in stores}
    for op in next(iter(calls.values())):
        whole_app = op == "list_sessions (app)"  # long calls (seconds, ADK's at 100 000 sessions): no warm-up call
        times = await timed_in_turn({name: of[op] for name, of in calls.items()},
                                    app_repeat(repeat) if whole_app else repeat, warm=not whole_app)
        for name, taken in times.items():
            results[name][op] = taken
    return results


def empty_session_pk(spec: Spec) -> int:
    """A session of the store with no event yet (kept, so a kept store is not grown run after run)."""
    key = {"app_name": spec.app, "user_id": spec.user(1), "session_id": "no-events-yet"}
    row = SessionRow.objects.filter(app__name=key["app_name"], user_id=key["user_id"], session_id=key["session_id"]).first()
    return row.pk if row is not None else session_create(**key).pk


def pages(spec: Spec, eval_set: EvalSet) -> dict[str, str]:
    app, user, session_id = spec.app, spec.user(1), spec.session_id(1)
    pk = SessionRow.objects.get(app__name=app, user_id=user, session_id=session_id).pk
    newest_run = eval_set.runs.order_by("-pk").first()
    return {
        "home page": "/",
        "app page": f"/apps/{app}/",
        "app page, sorted by health": f"/apps/{app}/?sort=-errors",
        "app page, needs attention": f"/apps/{app}/?attention=1",
        "app page, one user": f"/apps/{app}/?user={user}",
        "session page": f"/sessions/{pk}/",
        # Its frame (header, filters, state, chat and graph panels), which every session page pays.
        "session page, no events yet": f"/sessions/{empty_session_pk(spec)}/",
        "its artifacts panel": reverse("memory_app:artifacts_panel", args=[pk]),
        "search": f"/apps/{app}/search/?q=answer",
        "key history (user: key)": f"/sessions/{pk}/key-history/?key=user:turns",
        # An `app:` key every event of every session changes, and an early event's state: all of
        # the store's changes come after it.
        "key history (app: key)": f"/sessions/{pk}/key-history/?key=app:appends",
        "state as of its first event": f"/sessions/{pk}/state/?seq=1",
        "eval set's history": f"/evals/sets/{eval_set.pk}/",
        "its newest run": f"/evals/runs/{newest_run.pk}/",
        "API session list (ADK's)": f"/api/apps/{app}/users/{user}/sessions",
        "API session list, paged": f"/api/apps/{app}/users/{user}/sessions?page_size=50",
        "API artifact list": f"/api/apps/{app}/users/{user}/sessions/{session_id}/artifacts",
    }


def time_pages(client: Client, spec: Spec, eval_set: EvalSet, repeat: int) -> dict[str, tuple[float, float]]:
    results = {}
    for label, url in pages(spec, eval_set).items():
        samples = []
        for _ in range(repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.get(url, secure=True)  # DEBUG=0 redirects plain HTTP
            samples.append((time.perf_counter() - wall, time.process_time() - cpu))
            if response.status_code != 200:
                sys.exit(f"{url}: {response.status_code}")
        results[label] = median_times(samples)
    return results


def child_time_pages(args: argparse.Namespace, size: int, eval_set: EvalSet) -> dict[str, tuple[float, float]]:
    """`time_pages` in a child process set up as the server's is.

    It imports `adkui.asgi`, which loads every view and freezes what it loaded out of the
    garbage collector's sight: timed in this process, which holds the bench's own data besides,
    each page paid for collections walking some 280 000 objects the server never walks (1.08 s
    of 240 page requests at 1 000 sessions, 0.06 s frozen: 4.5 ms a page on average). And on
    PostgreSQL its requests borrow pooled connections, as the server's do with DEBUG=0, where
    this process (DB_POOL=0) would open a connection a page."""
    command = [sys.executable, __file__, "--pages-only", str(size), "--pages-eval-set", str(eval_set.pk),
               "--events", str(args.events), "--per-user", str(args.per_user), "--repeat", str(args.repeat)]
    if args.store:
        command += ["--store", args.store]
    env = {key: value for key, value in os.environ.items() if key != "DB_POOL"}
    if SERVER_DB_POOL is not None:
        env["DB_POOL"] = SERVER_DB_POOL
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return {label: (wall, cpu) for label, (wall, cpu) in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def pages_as_served(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """The child's side of `child_time_pages`."""
    import adkui.asgi  # noqa: F401, PLC0415 (the server's start: every view loaded, then gc.freeze())

    spec = Spec(f"scale_{args.pages_only}", args.pages_only, max(1, args.pages_only // args.per_user), args.events)
    return time_pages(logged_in_client(), spec, EvalSet.objects.get(pk=args.pages_eval_set), args.repeat)


def logged_in_client() -> Client:
    user, _ = User.objects.get_or_create(username="scale-bench")
    call_command("grant_role", "scale-bench", "editor", stdout=open(os.devnull, "w"))
    client = Client()
    client.force_login(user)
    return client


def print_table(title: str, rows: dict[str, dict[str, tuple[float, float]]]) -> None:
    names = list(rows)
    print(f"\n{title}")
    print(f"{'':28s}" + "".join(f"{n:>34s}" for n in names))
    for op in rows[names[0]]:
        cells = "".join(f"{rows[n][op][0]:12.2f} ms (CPU {rows[n][op][1]:7.2f})" if op in rows[n] else f"{'-':>34s}"
                        for n in names)
        print(f"{op:28s}{cells}")


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def print_targets(rows: dict[str, dict[str, tuple[float, float]]], server: dict[str, tuple[float, float]],
                  appends: dict[str, tuple[float, float]]) -> None:
    """#27's targets, each met or not (on wall time, CPU beside it)."""
    print("\ntargets (#27)")
    ours, adk = rows["DjangoSessionService"], rows["ADK SqliteSessionService"]
    for op, limit in (("list_sessions (user)", 0.2), ("list_sessions (app)", 0.5), ("create_session", 1.0)):
        wall, cpu = ours[op][0] / adk[op][0], ours[op][1] / adk[op][1]
        print(f"  {op:26s} <= {limit:.1f} of ADK Sqlite: {wall:.2f} wall, {cpu:.2f} CPU: {verdict(wall <= limit)}")
    (full, full_cpu), (empty, empty_cpu) = appends["filled store"], appends["empty store"]
    print(f"  append throughput, filled store >= 0.8 of an empty one's: {full:.0f}/s against {empty:.0f}/s = "
          f"{full / empty:.2f} ({full_cpu:.0f} against {empty_cpu:.0f} us CPU an append): {verdict(full >= 0.8 * empty)}"
          f" (on CPU: {verdict(full_cpu <= empty_cpu / 0.8)})")
    for page, (wall, cpu) in server.items():
        print(f"  {page:34s} <= {PAGE_LIMIT_MS:.0f} ms: {wall:7.1f} ms (CPU {cpu:6.1f}): {verdict(wall <= PAGE_LIMIT_MS)}"
              f" (on CPU: {verdict(cpu <= PAGE_LIMIT_MS)})")
    cpu, frame = server["session page"][1], server["session page, no events yet"][1]
    print(f"  {'session page, first screen':34s} <= {SESSION_PAGE_CPU_MS:.0f} ms of CPU: {cpu:6.1f} ms: "
          f"{verdict(cpu <= SESSION_PAGE_CPU_MS)} (its frame alone, no event yet: {frame:.1f} ms)")


async def append_rate(app: str, user: str, count: int) -> tuple[float, float]:
    """Appends a second and CPU microseconds an append: `count` events one after another to a new session."""
    service = DjangoSessionService()
    session = await service.create_session(app_name=app, user_id=user, session_id=f"rate-{RUN}")
    spec = Spec(app, 1, 1, count)
    events = []
    for i in range(count):
        event = spec.event(0, i)
        event.id, event.timestamp = f"rate-{RUN}-{i}", time.time() + i
        events.append(event)
    wall, cpu = time.perf_counter(), time.process_time()
    for event in events:
        await service.append_event(session, event)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return count / wall, cpu / count * 1e6


def empty_store_url() -> str:
    """A store with no rows: a new SQLite file, or `<name>_empty` on the same PostgreSQL server (made again)."""
    url = os.environ["DATABASE_URL"]
    if not url.startswith(("postgres://", "postgresql://")):
        path = TMP / "empty.sqlite3"
        for leftover in TMP.glob("empty.sqlite3*"):
            leftover.unlink()
        return f"sqlite:///{path}"
    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}_empty"')
        admin.execute(f'CREATE DATABASE "{name}_empty"')
    return f"{base}/{name}_empty"


def child_append_rate(count: int, database_url: str, app: str) -> tuple[float, float]:
    """`append_rate` in a child process of its own, on `database_url`: the filled store's run and the
    empty one's alike, each in a fresh interpreter (this process, holding a whole app's lists, would
    charge its own garbage collector's walks over them to the filled store), and Django has one
    default database a process."""
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run([sys.executable, __file__, "--append-only", str(count), "--append-app", app], env=env,
                          check=True, capture_output=True, text=True)
    rate, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return rate, cpu


def append_rates(count: int, rounds: int) -> dict[str, tuple[float, float]]:
    """The filled store's and an empty one's append rate, each the median of `rounds` child runs
    taken in turn: one run of each swung from 385 to 643 appends/s on a shared 2-core machine,
    enough to flip the target's verdict either way."""
    runs: dict[str, list[tuple[float, float]]] = {"filled store": [], "empty store": []}
    for i in range(rounds):
        runs["filled store"].append(child_append_rate(count, os.environ["DATABASE_URL"], f"rate-{RUN}-{i}"))
        runs["empty store"].append(child_append_rate(count, empty_store_url(), "empty"))
    return {store: (statistics.median(r for r, _ in done), statistics.median(c for _, c in done))
            for store, done in runs.items()}


def python_speed() -> float:
    """Seconds this machine takes for 10 million additions in a Python loop (best of 3): figures
    from two machines compare only beside it (1.6-1.7 s on the 2-core machine of 2026-11-28)."""
    def loop() -> float:
        start, total = time.perf_counter(), 0
        for i in range(10_000_000):
            total += i
        return time.perf_counter() - start
    return min(loop() for _ in range(3))


async def run(args: argparse.Namespace) -> None:
    database = os.environ["DATABASE_URL"].split(":")[0]
    print(f"this machine: 10 million additions in a Python loop take {python_speed():.2f} s")
    print(f"ours on {database}; ADK DatabaseSessionService on {adk_database_url().split(':')[0]}; "
          f"{args.events} events a session, {args.per_user} sessions a user; stores in {TMP}")
    for size in args.sizes:
        spec = Spec(f"scale_{size}", size, max(1, size // args.per_user), args.events)
        sqlite_path = TMP / f"adk_sqlite_{size}x{args.events}.db"
        stores: dict[str, BaseSessionService] = {
            "DjangoSessionService": DjangoSessionService(),
            "ADK SqliteSessionService": SqliteSessionService(str(sqlite_path)),
            "ADK DatabaseSessionService": DatabaseSessionService(adk_database_url()),
        }
        for service in list(stores.values())[1:]:
            await service.list_sessions(app_name="none")  # creates its tables
        print(f"\n{size} sessions, {size * args.events} events, {spec.users} users")
        if to_fill("ours", await sync_to_async(ours_count)(spec.app), spec):
            filled = await sync_to_async(fill_ours)(spec, args.bulk)
            how = "the bulk builder" if args.bulk else "the write path"
            print(f"ours filled in {filled:.0f} s ({filled / size * 1e3:.2f} ms a session through {how})")
        eval_set = await sync_to_async(fill_extras)(spec)
        await fill_adk(stores, spec, args.chunk, sqlite_path)
        await sync_to_async(analyze)()
        await verify(stores, spec)
        results = await time_services(stores, spec, args.repeat)
        print_table(f"service calls at {size} sessions, median of {args.repeat} (list of the app: of {app_repeat(args.repeat)}), the services in turn",
                    results)
        server = await sync_to_async(child_time_pages)(args, size, eval_set)
        print_table(f"server time at {size} sessions (Django test Client, DEBUG=0, a process started as the server)", {"ours": server})
        # An app of its own: its state deltas must not reach the app the stores are compared on.
        appends = append_rates(args.appends, args.append_rounds)
        print_targets(results, server, appends)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000],
                        help="sessions in the app, one store each (comma-separated)")
    parser.add_argument("--events", type=int, default=5, help="events a session")
    parser.add_argument("--per-user", type=int, default=50, help="sessions a user")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--bulk", action="store_true", help="fill ours with the bulk builder, not the write path")
    parser.add_argument("--store", help="folder of the SQLite stores, kept and reused by the next run")
    parser.add_argument("--chunk", type=int, default=1000, help="sessions of ADK's stores generated at a time")
    parser.add_argument("--appends", type=int, default=200, help="events of the append throughput runs")
    parser.add_argument("--append-rounds", type=int, default=5, help="append runs of each store, in turn (median)")
    parser.add_argument("--append-only", type=int, help=argparse.SUPPRESS)  # an append run, in a child
    parser.add_argument("--append-app", default="empty", help=argparse.SUPPRESS)
    parser.add_argument("--pages-only", type=int, help=argparse.SUPPRESS)  # the pages of a size, in a child
    parser.add_argument("--pages-eval-set", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    if args.append_only:
        print(json.dumps(asyncio.run(append_rate(args.append_app, "user", args.append_only))))
        return
    if args.pages_only:
        print(json.dumps(pages_as_served(args)))
        return
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves hashed files
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
