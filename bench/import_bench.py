"""Import benchmark: reading an ADK SqliteSessionService store through ADK alone
beside `import_adk` bringing it into adkui, with peak memory.

Builds N sessions x M events (text + a small session/user delta) with ADK's own
service API, then times (a) list_sessions + get_session of every session and
(b) our import of the same store. Peak RSS is printed after each, to show the
import streams session by session (memory does not grow with N).

    DEBUG=0 python bench/import_bench.py [--sessions 1000] [--events 100]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-import-bench-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")  # DEBUG records every query: not what a deployment runs

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402

from runtime_app.adk_import import import_source  # noqa: E402

APP = "bench_app"


def _event(s: int, i: int) -> Event:
    return Event(
        invocation_id=f"inv-{s}-{i // 4}", author="agent" if i % 2 else "user",
        content=types.Content(role="model", parts=[types.Part(text=f"message {i} " + "lorem ipsum " * 8)]),
        actions=EventActions(state_delta={"counter": i, "topic": f"t{i % 7}", "user:last_seen": i}),
    )


async def build(db: Path, sessions: int, events: int) -> None:
    service = SqliteSessionService(str(db))
    for s in range(sessions):
        session = await service.create_session(app_name=APP, user_id=f"user-{s % 10}", session_id=f"s{s:05d}",
                                               state={"origin": "bench", "user:plan": "free"})
        for i in range(events):
            await service.append_event(session, _event(s, i))
        if (s + 1) % 50 == 0:
            print(f"\rbuilt {s + 1}/{sessions} sessions", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


async def read_all(db: Path) -> int:
    service = SqliteSessionService(f"sqlite:///{db}?mode=ro")
    n = 0
    for stub in (await service.list_sessions(app_name=APP)).sessions:
        session = await service.get_session(app_name=APP, user_id=stub.user_id, session_id=stub.id)
        n += len(session.events)
    return n


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    db = TMP / "session.db"
    t = time.perf_counter()
    asyncio.run(build(db, args.sessions, args.events))
    print(f"store: {args.sessions} sessions x {args.events} events, built in {time.perf_counter() - t:.1f}s ({db})")
    base = peak_mb()
    t = time.perf_counter()
    n = asyncio.run(read_all(db))
    read_s, read_peak = time.perf_counter() - t, peak_mb()
    t = time.perf_counter()
    summary = import_source(str(db), app=APP)
    import_s, import_peak = time.perf_counter() - t, peak_mb()
    assert summary.events_new == n == args.sessions * args.events, (summary, n)
    print(f"{'':28}{'seconds':>10}{'events/s':>12}{'peak RSS MB':>14}")
    print(f"{'(a) ADK read, every session':28}{read_s:>10.2f}{n / read_s:>12.0f}{read_peak:>14.1f}")
    print(f"{'(b) import_adk':28}{import_s:>10.2f}{n / import_s:>12.0f}{import_peak:>14.1f}")
    print(f"peak RSS before reading: {base:.1f} MB; import summary: {'; '.join(summary.lines())}")


if __name__ == "__main__":
    main()
