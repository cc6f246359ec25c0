"""Live timeline benchmark.

1. N websocket viewers watch one session on a real ASGI server (uvicorn, on
   localhost); events are appended through the service in the server's
   process; prints p50/p99 latency from the start of the append to the frame
   arriving at each viewer.
2. The session page's server time on a session with --big events: the first
   page, and a "load older" page from the middle of the history.

    python bench/live_bench.py [--viewers 50] [--events 200] [--big 100000]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="adkui-live-bench-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'adkui.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("ADKUI_LOCAL_DEV", "1")  # no logins: viewers are anonymous
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")  # plain http on localhost

import django  # noqa: E402

django.setup()

import websockets  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.genai import types  # noqa: E402

from adkui.adk import DjangoSessionService  # noqa: E402
from sessions_app.models import Event as EventRow  # noqa: E402
from sessions_app.models import Session as SessionRow  # noqa: E402
from sessions_app.models import StateChange  # noqa: E402

APP, USER = "live_bench", "viewer"


def make_event(i: int) -> Event:
    return Event(
        author="agent", invocation_id=f"inv-{i // 5}",
        content=types.Content(role="model", parts=[types.Part(text=f"reply {i}: " + "lorem ipsum " * 6)]),
        actions=EventActions(state_delta={"counter": i, "user:seen": i}),
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def _viewers(url: str, viewers: int, events: int, out) -> None:
    """Runs in its own process: N websocket clients, arrival times per seq."""
    arrivals: list[tuple[int, float]] = []

    async def one(ready: asyncio.Event) -> None:
        async with websockets.connect(url, origin="http://localhost") as ws:
            ready.set()
            async for frame in ws:
                now = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
                marker = frame.find('id="event-')
                if marker >= 0:
                    arrivals.append((int(frame[marker + 10: frame.index('"', marker + 10)]), now))
                    if len(arrivals) == viewers * events:
                        return

    readies = [asyncio.Event() for _ in range(viewers)]
    tasks = [asyncio.create_task(one(r)) for r in readies]
    await asyncio.gather(*(r.wait() for r in readies))
    out.send("ready")
    await asyncio.wait(tasks, timeout=120)
    out.send(arrivals)


def _viewer_process(url: str, viewers: int, events: int, out) -> None:
    asyncio.run(_viewers(url, viewers, events, out))


def measure_push(server, viewers: int, events: int) -> list[float]:
    import multiprocessing

    service = DjangoSessionService()
    adk = server.call(service.create_session_sync, app_name=APP, user_id=USER, session_id="watched")
    pk = server.call(lambda: SessionRow.objects.get(session_id="watched").pk)
    url = f"ws://127.0.0.1:{server.port}/ws/sessions/{pk}/events/?after=0"
    ours, theirs = multiprocessing.Pipe()
    viewer = multiprocessing.get_context("fork").Process(target=_viewer_process, args=(url, viewers, events, theirs))
    viewer.start()
    if not ours.poll(60):
        raise SystemExit("the viewers could not connect (see the server log above)")
    assert ours.recv() == "ready"
    time.sleep(0.5)  # every consumer has joined its group
    started: dict[int, float] = {}
    for i in range(1, events + 1):
        started[i] = time.perf_counter()
        server.call(service.append_event_sync, adk, make_event(i))
        time.sleep(0.02)
    if not ours.poll(180):
        raise SystemExit("the viewers never reported")
    arrivals = ours.recv()
    viewer.join(10)
    missing = viewers * events - len(arrivals)
    if missing:
        print(f"  warning: {missing} frames did not arrive")
    return [(t - started[seq]) * 1000 for seq, t in arrivals]


def grow_session(total: int) -> SessionRow:
    """A session of `total` events (rows inserted directly; reading is what we time)."""
    service = DjangoSessionService()
    adk = service.create_session_sync(app_name=APP, user_id=USER, session_id="big", state={"counter": 0})
    for i in range(1, 11):
        service.append_event_sync(adk, make_event(i))
    row = SessionRow.objects.get(session_id="big")
    data = EventRow.objects.filter(session=row).order_by("-seq").values_list("data", flat=True)[0]
    batch, changes = [], []
    for seq in range(11, total + 1):
        batch.append(EventRow(session=row, seq=seq, event_id=f"e{seq}", invocation_id=f"inv-{seq // 5}", author="agent",
                              timestamp=1e9 + seq, data=data, is_final_response=True))
        if len(batch) == 5000:
            EventRow.objects.bulk_create(batch)
            batch = []
    EventRow.objects.bulk_create(batch)
    for event in EventRow.objects.filter(session=row, seq__gt=total - 200):
        changes.append(StateChange(app=row.app, user_id=USER, session=row, event=event, seq=event.seq, scope="session",
                                   key="counter", old_value=event.seq - 1, new_value=event.seq, existed_before=True,
                                   timestamp=event.timestamp))
    StateChange.objects.bulk_create(changes)
    SessionRow.objects.filter(pk=row.pk).update(revision=total)
    return row


def time_get(client: Client, url: str, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves hashed files, as in production

    from tests.conftest import LiveServer

    server = LiveServer()
    latencies = measure_push(server, args.viewers, args.events)
    server.stop()
    print(f"append -> frame, {args.viewers} viewers x {args.events} events: "
          f"p50 {percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms "
          f"(targets 10 / 50 ms)")

    if args.big:
        row = grow_session(args.big)
        client = Client()
        first = time_get(client, f"/sessions/{row.pk}/", args.repeat)
        older = time_get(client, f"/sessions/{row.pk}/events/?before={args.big // 2}", args.repeat)
        state = time_get(client, f"/sessions/{row.pk}/state/?seq={args.big // 2}", args.repeat)
        print(f"session page of a {args.big}-event session: first page {first:.1f} ms (target 150), "
              f"load older {older:.1f} ms (target 50), state as of the middle {state:.1f} ms")


if __name__ == "__main__":
    main()
