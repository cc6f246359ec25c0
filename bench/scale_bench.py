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

Before timing, a sample of sessions is read back from all three stores
through each service's `get_session`: state and events must be equal, and the
bulk-written ADK stores must equal stores of the same calls made through
ADK's own API, or the bench stops.

Then, per size and in the same run: `list_sessions` for the app and for one
user, `create_session`, `get_session` (recent 50), `append_event`, each the
median wall time and process CPU time (all threads) of --repeat calls; and
the server time (Django test Client, DEBUG=0, a logged-in editor) of the home
page, the app page (default, sorted by health, "needs attention", one user),
a session page, search, key history and the API's session lists.

    python bench/scale_bench.py [--sizes 1000,10000] [--events 5] [--per-user 50] [--repeat 15]

Ours runs on a fresh SQLite file, or DATABASE_URL (PostgreSQL: a database the
bench may fill; ADK's DatabaseSessionService then runs on the same server,
in a schema of its own tables). 100 000 sessions with 100 events each (10M
events) is `--sizes 100000 --events 100`: hours of filling on a laptop.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-scale-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ["DEBUG"] = "0"  # DEBUG records every query: not what a deployment runs
os.environ["ADKUI_LOCAL_DEV"] = "0"
os.environ.setdefault("DB_POOL", "0")  # the test Client and the bench share this thread's connection

import django  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions import Session  # noqa: E402
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig  # noqa: E402
from google.adk.sessions.database_session_service import DatabaseSessionService  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.adk.sessions.state import State  # noqa: E402

from adkui.adk import DjangoSessionService  # noqa: E402
from sessions_app.generated import BASE_TIME, fill  # noqa: E402
from session_bench import adk_database_url, analyze  # noqa: E402  (bench/ is this script's folder)
from sessions_app.generated import GeneratedApp as Spec  # noqa: E402
from sessions_app.models import Session as SessionRow  # noqa: E402

SAMPLE = 3  # sessions read back from every store before timing


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


def build(spec: Spec, indexes: range) -> Built:
    built = Built()
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


def fill_adk_sqlite(path: Path, spec: Spec, built: Built) -> None:
    """ADK SqliteSessionService's rows, as its create_session and append_event write them."""
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT OR REPLACE INTO app_states VALUES (?, ?, ?)", (spec.app, json.dumps(built.app_state), BASE_TIME))
        db.executemany("INSERT OR REPLACE INTO user_states VALUES (?, ?, ?, ?)",
                       [(spec.app, u, json.dumps(st), BASE_TIME) for u, st in built.user_states.items()])
        db.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                       [(spec.app, u, sid, json.dumps(st), c, up) for u, sid, st, c, up, _ in built.sessions])
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (e.id, spec.app, u, sid, e.invocation_id, e.timestamp, e.model_dump_json(exclude_none=True))
            for u, sid, _, _, _, events in built.sessions for e in events
        ])
    db.close()


async def fill_adk_database(service: DatabaseSessionService, spec: Spec, built: Built) -> None:
    """ADK DatabaseSessionService's rows, built by its own storage classes."""
    schema = service._get_schema_classes()
    naive = service._uses_naive_datetime()

    def stamp(ts: float) -> datetime:
        moment = datetime.fromtimestamp(ts, tz=timezone.utc)
        return moment.replace(tzinfo=None) if naive else moment

    async with service.database_session_factory() as db:
        db.add(schema.StorageAppState(app_name=spec.app, state=built.app_state, update_time=stamp(BASE_TIME)))
        db.add_all([schema.StorageUserState(app_name=spec.app, user_id=u, state=st, update_time=stamp(BASE_TIME))
                    for u, st in built.user_states.items()])
        for u, sid, st, created, updated, events in built.sessions:
            db.add(schema.StorageSession(app_name=spec.app, user_id=u, id=sid, state=st,
                                         create_time=stamp(created), update_time=stamp(updated)))
            stub = Session(app_name=spec.app, user_id=u, id=sid)
            db.add_all([schema.StorageEvent.from_event(stub, e) for e in events])
        await db.commit()


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
    check = Spec(f"{spec.app}-api", SAMPLE, spec.users, spec.events)
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


async def timed(call: Callable[[int], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    """Median wall and CPU (process, all threads) milliseconds of `repeat` calls."""
    samples = []
    for i in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        await call(i)
        samples.append((time.perf_counter() - wall, time.process_time() - cpu))
    return median_times(samples)


async def time_service(service: BaseSessionService, spec: Spec, repeat: int, tag: str) -> dict[str, tuple[float, float]]:
    app, user, target = spec.app, spec.user(1), spec.session_id(1)
    recent = GetSessionConfig(num_recent_events=50)
    appended = await service.get_session(app_name=app, user_id=spec.user(2), session_id=spec.session_id(2))
    late = BASE_TIME + spec.sessions * 10 + 1e5

    async def append(i: int) -> None:
        event = spec.event(2, i)
        event.id, event.timestamp = f"bench-{tag}-{i}", late + i
        await service.append_event(appended, event)

    return {
        "list_sessions (app)": await timed(lambda i: service.list_sessions(app_name=app), max(3, repeat // 3)),
        "list_sessions (user)": await timed(lambda i: service.list_sessions(app_name=app, user_id=user), repeat),
        "create_session": await timed(lambda i: service.create_session(
            app_name=app, user_id=user, session_id=f"new-{tag}-{i}", state={"a": i, "user:b": i, "app:c": i}), repeat),
        "get_session (recent 50)": await timed(
            lambda i: service.get_session(app_name=app, user_id=user, session_id=target, config=recent), repeat),
        "append_event": await timed(append, repeat),
    }


def pages(spec: Spec) -> dict[str, str]:
    app, user = spec.app, spec.user(1)
    pk = SessionRow.objects.get(app__name=app, user_id=user, session_id=spec.session_id(1)).pk
    return {
        "home page": "/",
        "app page": f"/apps/{app}/",
        "app page, sorted by health": f"/apps/{app}/?sort=-errors",
        "app page, needs attention": f"/apps/{app}/?attention=1",
        "app page, one user": f"/apps/{app}/?user={user}",
        "session page": f"/sessions/{pk}/",
        "search": f"/apps/{app}/search/?q=answer",
        "key history (user: key)": f"/sessions/{pk}/key-history/?key=user:turns",
        "API session list (ADK's)": f"/api/apps/{app}/users/{user}/sessions",
    }


def time_pages(client: Client, spec: Spec, repeat: int) -> dict[str, tuple[float, float]]:
    results = {}
    for label, url in pages(spec).items():
        samples = []
        for _ in range(repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.get(url, secure=True)  # DEBUG=0 redirects plain HTTP
            samples.append((time.perf_counter() - wall, time.process_time() - cpu))
            if response.status_code != 200:
                sys.exit(f"{url}: {response.status_code}")
        results[label] = median_times(samples)
    return results


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


def print_targets(rows: dict[str, dict[str, tuple[float, float]]]) -> None:
    ours, adk = rows["DjangoSessionService"], rows["ADK SqliteSessionService"]
    for op, limit in (("list_sessions (user)", 0.2), ("list_sessions (app)", 0.5), ("create_session", 1.0)):
        wall, cpu = ours[op][0] / adk[op][0], ours[op][1] / adk[op][1]
        verdict = "met" if wall <= limit else "NOT met"
        print(f"target {op:24s} <= {limit:.1f} of ADK Sqlite: {wall:.2f} wall ({verdict}), {cpu:.2f} CPU")


async def run(args: argparse.Namespace) -> None:
    database = os.environ["DATABASE_URL"].split(":")[0]
    print(f"ours on {database}; ADK DatabaseSessionService on {adk_database_url().split(':')[0]}; "
          f"{args.events} events a session, {args.per_user} sessions a user")
    client = await sync_to_async(logged_in_client)()
    for size in args.sizes:
        spec = Spec(f"scale_{size}", size, max(1, size // args.per_user), args.events)
        stores: dict[str, BaseSessionService] = {
            "DjangoSessionService": DjangoSessionService(),
            "ADK SqliteSessionService": SqliteSessionService(str(TMP / f"adk_sqlite_{size}.db")),
            "ADK DatabaseSessionService": DatabaseSessionService(adk_database_url()),
        }
        for service in list(stores.values())[1:]:
            await service.list_sessions(app_name="none")  # creates its tables
        built = build(spec, range(size))
        start = time.perf_counter()
        await sync_to_async(fill)(spec, range(size))
        filled = time.perf_counter() - start
        fill_adk_sqlite(TMP / f"adk_sqlite_{size}.db", spec, built)
        await fill_adk_database(stores["ADK DatabaseSessionService"], spec, built)
        await sync_to_async(analyze)()
        print(f"\n{size} sessions, {size * args.events} events, {spec.users} users: ours filled in {filled:.0f} s "
              f"({filled / size * 1e3:.2f} ms a session through the write path)")
        await verify(stores, spec)
        results = {name: await time_service(service, spec, args.repeat, name[:3]) for name, service in stores.items()}
        print_table(f"service calls at {size} sessions, median of {args.repeat} (list of the app: of {max(3, args.repeat // 3)})",
                    results)
        print_targets(results)
        server = await sync_to_async(time_pages)(client, spec, args.repeat)
        print_table(f"server time at {size} sessions (Django test Client, DEBUG=0)", {"ours": server})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000],
                        help="sessions in the app, one store each (comma-separated)")
    parser.add_argument("--events", type=int, default=5, help="events a session")
    parser.add_argument("--per-user", type=int, default=50, help="sessions a user")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves hashed files
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
