"""Session-service benchmark: DjangoSessionService beside ADK's own services.

Appends N events (text + a 3-key delta across session and user scope) through
each service's async API, as a Runner would, then reads the session back in
full and with num_recent_events=50. Then grows one session to --big events
(rows inserted directly, since only the read is measured) and times recent-50
again, to show it does not grow with history length.

    python bench/session_bench.py [--events 2000] [--big 100000] [--repeat 20] [--writers 8]

Our service runs on a fresh SQLite file (or DATABASE_URL if set); ADK's
services run on SQLite files in the same temporary folder, in the same run.
With a PostgreSQL DATABASE_URL, ADK's DatabaseSessionService runs on that same
server instead (its async driver, postgresql+psycopg).

Besides wall-clock appends/s, each append line shows the process CPU time per
append (all threads): on a machine other work keeps busy, wall time measures
the machine, CPU time still measures the service.

--writers N (default 8; 0 skips) then appends to N sessions at once, one
coroutine each, --events in all, and prints each service's total appends/s,
and ours against one writer of ours timed right after; with how busy each run
kept our process and (on Linux) the whole machine, and from one writer's figures
the most more writers could give on this machine (its "ceiling").

Then the floors, measured in the same run: our appends called without the
thread hop (`append_event_sync`, all in one worker thread), which is what an
append costs once the hop is gone; and ADK's own `Event.model_validate_json`
of the stored events alone, the least any read that returns ADK events can
cost.

Last, the append budget: what one append may cost at 10x ADK's SQLite
service, beside what no append can avoid, each measured alone:
- the hop: the cheapest way from ADK's async API to a thread that may use
  the database (`loop.run_in_executor` on one dedicated thread, a no-op call),
  beside asgiref's `sync_to_async`;
- our transaction: `event_append`'s own statements (`sessions_app._append_sql`:
  lock, event row, change rows, user-state row, session row) with every value
  computed beforehand, so no checks, JSON or pydantic;
- the least an append writes (SQLite): raw sqlite3 on our schema, one
  transaction that inserts the event row and bumps the session row, nothing
  else (no state, no change rows).
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-bench-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")  # DEBUG records every query: not what a deployment runs

import django  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions.database_session_service import DatabaseSessionService  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig  # noqa: E402
from google.genai import types  # noqa: E402

from adkui.adk import DjangoSessionService  # noqa: E402
from sessions_app import _append_sql, selectors  # noqa: E402
from sessions_app.models import SCOPE_SESSION, SCOPE_USER  # noqa: E402
from sessions_app.models import Event as EventRow  # noqa: E402
from sessions_app.models import Session as SessionRow  # noqa: E402

APP, USER = "bench_app", "bench_user"


def adk_database_url() -> str:
    """ADK's DatabaseSessionService beside ours: the same PostgreSQL server, or a SQLite file."""
    url = os.environ["DATABASE_URL"]
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return f"sqlite+aiosqlite:///{TMP / 'adk_db.db'}"


def analyze() -> None:
    """On PostgreSQL, gather planner statistics (ours and ADK's tables share the
    database) before timing reads, as autovacuum does within a minute of this
    many inserts: a table never analyzed is planned as nearly empty, and a
    recent-50 read then sorts the whole session (5 ms instead of 0.2 ms)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def make_event(i: int) -> Event:
    return Event(
        invocation_id=f"inv-{i // 4}",
        author="agent" if i % 2 else "user",
        content=types.Content(role="model", parts=[types.Part(text=f"message number {i} " + "lorem ipsum " * 8)]),
        actions=EventActions(state_delta={"counter": i, "topic": f"t{i % 7}", "user:last_seen": i}),
    )


async def time_appends(service: BaseSessionService, n: int) -> tuple[str, float, float]:
    """The session, appends per second (wall clock) and process CPU microseconds per append."""
    session = await service.create_session(app_name=APP, user_id=USER)
    events = [make_event(i) for i in range(n)]
    start, cpu = time.perf_counter(), time.process_time()
    for event in events:
        await service.append_event(session, event)
    return session.id, n / (time.perf_counter() - start), (time.process_time() - cpu) / n * 1e6


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot, all cores (Linux's /proc/stat; None elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # user..steal; guest time is inside user


@dataclass
class WritersRun:
    """Concurrent appends: their rate, and how busy they kept our process and the machine."""

    appends_per_s: float
    process_cores: float  # CPU seconds of this process (every thread) a second
    machine_cores: float | None  # busy CPU seconds of the whole machine a second (the database server's too)


async def time_concurrent_appends(service: BaseSessionService, writers: int, n: int) -> WritersRun:
    """Total appends per second of `writers` sessions appended at once, `n` events in all."""
    sessions = [await service.create_session(app_name=APP, user_id=f"{USER}-{w}") for w in range(writers)]
    per_writer = n // writers

    async def write(session) -> None:
        for i in range(per_writer):
            await service.append_event(session, make_event(i))

    start, cpu, busy = time.perf_counter(), time.process_time(), machine_busy_seconds()
    await asyncio.gather(*(write(session) for session in sessions))
    wall = time.perf_counter() - start
    return WritersRun(per_writer * writers / wall, (time.process_time() - cpu) / wall, busy_cores(busy, wall))


def busy_cores(busy_before: float | None, seconds: float) -> float | None:
    """Busy cores of the whole machine on average over the `seconds` since it read `busy_before`."""
    busy_after = machine_busy_seconds()
    return None if busy_before is None or busy_after is None else (busy_after - busy_before) / seconds


async def machine_busy_now(seconds: float = 1.0) -> float | None:
    """Busy cores of the whole machine over `seconds` of this process sleeping (others' work)."""
    before = machine_busy_seconds()
    await asyncio.sleep(seconds)
    return busy_cores(before, seconds)


def writers_ceiling(one: WritersRun, background: float | None) -> str:
    """How far more writers could take one writer's rate on this machine, from how busy one keeps it.

    Our process runs its Python one thread at a time (the drivers' C code aside), so writers in
    it cannot pass 1 / (the cores one writer keeps it busy) times one writer; nor can anything
    pass the machine's cores left by its other work (`background`, measured just before) over
    the cores one writer adds to that (the database server's work for it included)."""
    text = (f"one writer keeps our process {one.process_cores:.2f} of a core busy"
            f" (more writers <= {1 / one.process_cores:.1f}x)")
    if one.machine_cores is None or background is None:
        return text
    cores, added = os.cpu_count() or 1, one.machine_cores - background
    if cores - background < 0.5 or added < 0.05:
        return text + f"; the machine was busy with other work ({background:.2f} of {cores} cores): no ceiling of its"
    return text + (f" and adds {added:.2f} busy cores to the machine's {background:.2f} of {cores}"
                   f" (<= {(cores - background) / added:.1f}x)")


async def time_read(service: BaseSessionService, session_id: str, repeat: int, recent: int | None) -> float:
    config = GetSessionConfig(num_recent_events=recent) if recent else None
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id, config=config)
        timings.append((time.perf_counter() - start) * 1000)
    assert session is not None and session.events
    return statistics.median(timings)


async def print_floors(service: DjangoSessionService, session_id: str, args: argparse.Namespace) -> dict[str, float]:
    """Appends without the per-call thread hop, and the validation alone of a full read."""
    session = await service.create_session(app_name=APP, user_id=USER)
    events = [make_event(i) for i in range(args.events)]

    def append_all() -> float:
        start = time.perf_counter()
        for event in events:
            service.append_event_sync(session, event)
        return args.events / (time.perf_counter() - start)

    rate = await sync_to_async(append_all)()
    stored = await sync_to_async(stored_event_json)(session_id)
    timings = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for text in stored:
            Event.model_validate_json(text)
        timings.append((time.perf_counter() - start) * 1000)
    print(f"{'floors':28s} appends/s without the thread hop {rate:6.0f}   "
          f"ADK's Event validation alone of the {len(stored)} stored events ms {statistics.median(timings):6.2f}")
    return {"appends_per_s_no_hop": rate, "validation_ms": statistics.median(timings)}


def stored_event_json(session_id: str) -> list[str]:
    row = selectors.session_find(app_name=APP, user_id=USER, session_id=session_id)
    return selectors.session_event_json(session=row)


def _noop() -> None:
    return None


async def hop_us(n: int = 5000) -> dict[str, float]:
    """Microseconds per call of a no-op hopped to a thread and back."""
    loop = asyncio.get_running_loop()
    timings = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
        for label, call in (("run_in_executor", lambda: loop.run_in_executor(executor, _noop)),
                            ("sync_to_async", lambda: sync_to_async(_noop)())):
            start = time.perf_counter()
            for _ in range(n):
                await call()
            timings[label] = (time.perf_counter() - start) / n * 1e6
    return timings


def _prepared_appends(session_id: str, n: int) -> list[tuple[EventRow, str, list[_append_sql.Change]]]:
    """`n` appends' rows as `event_append` would build them, each with its JSON and change rows."""
    row = SessionRow.objects.get(app__name=APP, user_id=USER, session_id=session_id)
    prepared = []
    for i in range(n):
        event = make_event(i)
        seq = row.revision + 1 + i
        data = event.model_dump(mode="json", exclude_none=True)
        prepared.append((
            EventRow(session_id=row.pk, seq=seq, event_id=event.id, invocation_id=event.invocation_id,
                     author=event.author, timestamp=event.timestamp, data=data, is_final_response=True),
            json.dumps(data),
            [_append_sql.Change(SCOPE_SESSION, "counter", i - 1, i, True),
             _append_sql.Change(SCOPE_SESSION, "topic", "t", f"t{i % 7}", True),
             _append_sql.Change(SCOPE_USER, "last_seen", i - 1, i, True)],
        ))
    return prepared


def our_transaction_us(session_id: str, n: int) -> float:
    """`event_append`'s statements alone, one transaction per append, values computed beforehand."""
    prepared = _prepared_appends(session_id, n)
    start = time.perf_counter()
    for row, data_json, changes in prepared:
        with transaction.atomic(), connection.cursor() as cursor:
            sql = _append_sql.Statements(cursor)
            locked = sql.lock_session(APP, USER, session_id, event_id=row.event_id, scopes=[SCOPE_USER])
            sql.event_seq(locked, row.event_id)
            row.state_mark = sql.newest_change_id(locked)
            user_state = sql.lock_scope(SCOPE_USER, locked)
            user_state["last_seen"] = row.seq
            sql.save_scope(SCOPE_USER, locked, user_state, row.timestamp)
            row.pk = sql.insert_event(row, data_json)
            sql.insert_changes(locked, changes, event_pk=row.pk, seq=row.seq, timestamp=row.timestamp)
            locked.state.update(counter=row.seq, topic="t")
            sql.bump_session(locked.pk, row.seq, row.timestamp, locked.state)
    return (time.perf_counter() - start) / n * 1e6


def least_append_us(session_id: str, n: int) -> float | None:
    """Raw sqlite3 on our schema: insert the event row and bump the session row, one transaction each."""
    if connection.vendor != "sqlite":
        return None
    prepared = _prepared_appends(session_id, n)
    columns = _append_sql.EVENT_COLUMNS
    insert = f"INSERT INTO {EventRow._meta.db_table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    bump = f"UPDATE {SessionRow._meta.db_table} SET revision = ?, update_time = ? WHERE id = ?"
    db = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        db.execute("PRAGMA synchronous=NORMAL")  # as settings.py sets it (the file is already in WAL mode)
        start = time.perf_counter()
        for row, data_json, _ in prepared:
            db.execute("BEGIN IMMEDIATE")
            db.execute(insert, tuple(data_json if c == "data" else getattr(row, c) for c in columns))
            db.execute(bump, (row.seq, row.timestamp, row.session_id))
            db.execute("COMMIT")
        return (time.perf_counter() - start) / n * 1e6
    finally:
        db.close()


async def print_budget(service: DjangoSessionService, adk_sqlite_rate: float, n: int) -> dict[str, float]:
    """What an append may cost at 10x ADK's SQLite service, beside what none can avoid."""
    hops = await hop_us()
    ours = await service.create_session(app_name=APP, user_id=USER)
    least = await service.create_session(app_name=APP, user_id=USER)
    txn = await sync_to_async(our_transaction_us)(ours.id, n)
    floor = await sync_to_async(least_append_us)(least.id, n)
    budget = 1e6 / (10 * adk_sqlite_rate)
    least_text = "n/a (SQLite only)" if floor is None else f"{floor:5.0f} us"
    print(f"{'append budget':28s} 10x ADK Sqlite allows {budget:5.0f} us an append; the hop alone "
          f"{hops['run_in_executor']:4.0f} us (sync_to_async {hops['sync_to_async']:4.0f} us); "
          f"our transaction alone {txn:5.0f} us; the least an append writes {least_text}")
    return {"budget_us": budget, "hop_us": hops["run_in_executor"], "sync_to_async_us": hops["sync_to_async"],
            "our_transaction_us": txn, **({} if floor is None else {"least_append_us": floor})}


def grow_ours(session_id: str, total: int) -> None:
    """Insert rows directly up to `total` events (the read is what we measure)."""
    row = SessionRow.objects.get(session_id=session_id)
    data = make_event(0).model_dump(mode="json", exclude_none=True)
    batch = []
    for seq in range(row.revision + 1, total + 1):
        batch.append(EventRow(session=row, seq=seq, event_id=f"e{seq}", author="agent", timestamp=1e9 + seq, data=data))
        if len(batch) == 5000:
            EventRow.objects.bulk_create(batch)
            batch = []
    EventRow.objects.bulk_create(batch)
    SessionRow.objects.filter(pk=row.pk).update(revision=total, update_time=1e9 + total)


def grow_adk_sqlite(db_path: Path, session_id: str, total: int, have: int) -> None:
    event = make_event(0)
    with sqlite3.connect(db_path) as db:
        rows = []
        for i in range(have, total):
            event.id, event.timestamp = f"e{i}", 1e9 + i
            rows.append((event.id, APP, USER, session_id, "inv", event.timestamp, event.model_dump_json(exclude_none=True)))
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


async def run(args: argparse.Namespace) -> None:
    adk_sqlite_path = TMP / "adk_sqlite.db"
    services: dict[str, BaseSessionService] = {
        "DjangoSessionService": DjangoSessionService(),
        "ADK SqliteSessionService": SqliteSessionService(str(adk_sqlite_path)),
        "ADK DatabaseSessionService": DatabaseSessionService(adk_database_url()),
    }
    print(f"ours on {os.environ['DATABASE_URL'].split(':')[0]}, ADK DatabaseSessionService on "
          f"{adk_database_url().split(':')[0]}")
    results: dict[str, dict[str, float]] = {}
    for name, service in services.items():
        session_id, rate, cpu_us = await time_appends(service, args.events)
        await sync_to_async(analyze)()
        full = await time_read(service, session_id, args.repeat, None)
        recent = await time_read(service, session_id, args.repeat, 50)
        results[name] = {"appends_per_s": rate, "append_cpu_us": cpu_us, "full_read_ms": full, "recent50_ms": recent,
                         "session": session_id}
        print(f"{name:28s} appends/s {rate:9.0f} (CPU {cpu_us:6.0f} us each)   full read of {args.events} ms "
              f"{full:8.2f}   recent-50 ms {recent:6.2f}")

    if args.writers:
        for name, service in services.items():
            try:
                run = await time_concurrent_appends(service, args.writers, args.events)
            except Exception as exc:  # e.g. ADK's DatabaseSessionService on SQLite: "database is locked"
                results[name]["concurrent_appends_per_s"] = 0.0
                print(f"{name:28s} {args.writers} writers at once: failed: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:100]}")
                continue
            results[name]["concurrent_appends_per_s"] = run.appends_per_s
            print(f"{name:28s} {args.writers} writers at once: {run.appends_per_s:9.0f} appends/s in all"
                  f" (our process {run.process_cores:.2f} cores busy"
                  + ("" if run.machine_cores is None else f", the machine {run.machine_cores:.2f}") + ")")
        # One writer again, right after: a shared machine's commit latency drifts in minutes,
        # so the scaling figure compares runs made back to back.
        ours = services["DjangoSessionService"]
        background = await machine_busy_now()
        one = await time_concurrent_appends(ours, 1, args.events)
        results["DjangoSessionService"]["one_writer_appends_per_s"] = one.appends_per_s
        ceiling = writers_ceiling(one, background)

    floors = await print_floors(services["DjangoSessionService"], results["DjangoSessionService"]["session"], args)
    floors |= await print_budget(
        services["DjangoSessionService"], results["ADK SqliteSessionService"]["appends_per_s"], args.events
    )

    if args.big:
        ours = results["DjangoSessionService"]
        await sync_to_async(grow_ours)(ours["session"], args.big)
        big_ours = await time_read(services["DjangoSessionService"], ours["session"], args.repeat, 50)
        adk = results["ADK SqliteSessionService"]
        grow_adk_sqlite(adk_sqlite_path, adk["session"], args.big, args.events)
        big_adk = await time_read(services["ADK SqliteSessionService"], adk["session"], args.repeat, 50)
        print(f"recent-50 on a {args.big}-event session: DjangoSessionService {big_ours:.2f} ms, "
              f"ADK SqliteSessionService {big_adk:.2f} ms")

    ours, sqlite_, db_ = (results[k] for k in services)
    print()
    print(f"append throughput  vs ADK Sqlite: {ours['appends_per_s'] / sqlite_['appends_per_s']:.1f}x   "
          f"vs ADK Database: {ours['appends_per_s'] / db_['appends_per_s']:.1f}x   (target >= 10x Sqlite)")
    print(f"append CPU time    vs ADK Sqlite: {ours['append_cpu_us'] / sqlite_['append_cpu_us']:.2f}   "
          f"vs ADK Database: {ours['append_cpu_us'] / db_['append_cpu_us']:.2f}")
    if args.writers:
        ratios = [f"vs {label}: {ours['concurrent_appends_per_s'] / other['concurrent_appends_per_s']:.1f}x"
                  for label, other in (("ADK Sqlite", sqlite_), ("ADK Database", db_)) if other["concurrent_appends_per_s"]]
        print(f"{args.writers} writers at once  {'   '.join(ratios) or '(no ADK service finished)'}   "
              f"vs our one writer just after: {ours['concurrent_appends_per_s'] / ours['one_writer_appends_per_s']:.1f}x "
              f"(target on PostgreSQL >= 4x, on SQLite >= 1x)")
        print(f"writers' ceiling   {ceiling}")
    print(f"full read time     vs ADK Sqlite: {ours['full_read_ms'] / sqlite_['full_read_ms']:.2f}   "
          f"vs ADK Database: {ours['full_read_ms'] / db_['full_read_ms']:.2f}   (target <= 0.33)")
    print(f"floors             vs ADK Sqlite: appends without the hop {floors['appends_per_s_no_hop'] / sqlite_['appends_per_s']:.1f}x   "
          f"validation alone {floors['validation_ms'] / sqlite_['full_read_ms']:.2f} of its full read")
    budget = floors["budget_us"]
    least = floors.get("least_append_us")
    print(f"append budget      the hop {floors['hop_us'] / budget:.2f} of it, our transaction alone "
          f"{floors['our_transaction_us'] / budget:.2f}" + ("" if least is None else
          f", hop + the least an append writes {(floors['hop_us'] + least) / budget:.2f}"))
    print(f"recent-50 time     vs ADK Sqlite: {ours['recent50_ms'] / sqlite_['recent50_ms']:.2f}   "
          f"vs ADK Database: {ours['recent50_ms'] / db_['recent50_ms']:.2f}")
    print(json.dumps({"database": os.environ["DATABASE_URL"].split(":")[0], "floors": {
        k: round(v, 2) for k, v in floors.items()}, **{
        k: {m: round(v, 2) for m, v in r.items() if m != "session"} for k, r in results.items()}}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--big", type=int, default=100_000, help="events for the long-history recent-50 read (0: skip)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--writers", type=int, default=8, help="sessions appended at once (0: skip)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
