"""Push latency across processes: an event appended by one process, to its row
arriving on an open session page's websocket served by another.

For each configuration it migrates a fresh database, starts the server as
production does (uvicorn, DEBUG=0; logins off so the socket needs no cookie),
opens the session page's websocket (`/ws/sessions/<pk>/events/`, as the page
does), and starts a writer process (`DjangoSessionService.append_event_sync`,
the write path every writer uses) that appends --events events --gap seconds
apart, each stamped with the time it was sent. The socket's reader notes when
each stamped row arrives, and this prints p50, p99 and the worst.

    python bench/push_bench.py [--config sqlite-memory,postgres-redis] [--events 200] [--gap 0.05]

- `sqlite-memory`: the embedded default: a SQLite file, the in-process channel
  layer, so the push crosses processes through `sessions_app.relay` (polled
  every ADKUI_RELAY_INTERVAL, 0.1 s by default).
- `postgres-redis`: PostgreSQL (--pg-url, created if missing) and the Redis
  channel layer (--redis-url), as production runs.
- `postgres-memory`: PostgreSQL without Redis (the relay on PostgreSQL).

ADK has no live push to compare with: its servers show a session as of a reload.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
APP, USER, SESSION = "push_bench", "bench-user", "push-bench"
STAMP = re.compile(r"push-bench sent=([0-9.]+) n=(\d+)")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="sqlite-memory,postgres-redis")
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between two appends")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/h_push")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def write(events: int, gap: float) -> None:
    """The writer process: append stamped events to the bench session."""
    import django

    django.setup()
    from google.adk.events.event import Event
    from google.genai import types

    from adkui.adk import DjangoSessionService

    service = DjangoSessionService()
    session = service.get_session_sync(app_name=APP, user_id=USER, session_id=SESSION)
    for n in range(events):
        text = f"push-bench sent={time.time():.6f} n={n}"
        content = types.Content(role="model", parts=[types.Part(text=text)])
        service.append_event_sync(session, Event(author="agent", invocation_id=f"i{n}", content=content))
        time.sleep(gap)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url(config: str, pg_url: str, folder: str) -> str:
    if config.startswith("sqlite"):
        return f"sqlite:///{folder}/push.sqlite3"
    import psycopg

    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_url


def _env(config: str, database_url: str, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DATABASE_URL=database_url, DEBUG="0", ADKUI_LOCAL_DEV="1", SECRET_KEY="push-bench",
               DJANGO_SETTINGS_MODULE="adkui.settings", ADKUI_CHANNEL_PREFIX="push-bench")
    if config.endswith("redis"):
        env["REDIS_URL"] = redis_url
    return env


def _prepare(env: dict[str, str]) -> int:
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"]):  # the Procfile's release line
        subprocess.run([sys.executable, "manage.py", *command, "-v0"], cwd=ROOT, env=env, check=True)
    code = ("import django; django.setup()\n"
            "from adkui.adk import DjangoSessionService\n"
            "from sessions_app.models import Session\n"
            f"DjangoSessionService().create_session_sync(app_name={APP!r}, user_id={USER!r}, session_id={SESSION!r})\n"
            f"print(Session.objects.get(session_id={SESSION!r}).pk)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1])


async def _listen(url: str, origin: str, expected: int, deadline: float, ready: asyncio.Event) -> dict[int, float]:
    import websockets

    latencies: dict[int, float] = {}
    async with websockets.connect(url, origin=origin, max_size=None) as ws:
        ready.set()
        while len(latencies) < expected and time.time() < deadline:
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.time()))
            except asyncio.TimeoutError:
                break
            now = time.time()
            for sent, n in STAMP.findall(frame):
                latencies.setdefault(int(n), now - float(sent))
    return latencies


async def _measure(args: argparse.Namespace, env: dict[str, str], pk: int, port: int) -> dict[int, float]:
    ready = asyncio.Event()
    deadline = time.time() + 60 + args.events * args.gap * 2
    url, origin = f"ws://127.0.0.1:{port}/ws/sessions/{pk}/events/", f"http://127.0.0.1:{port}"
    listener = asyncio.create_task(_listen(url, origin, args.events, deadline, ready))
    await ready.wait()
    await asyncio.sleep(0.5)  # the consumer has joined and sent its catch-up
    writer = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--writer", "--events", str(args.events), "--gap", str(args.gap), cwd=ROOT, env=env)
    await writer.wait()
    return await listener


def _wait_for_server(port: int, server: subprocess.Popen) -> None:
    import httpx

    for _ in range(300):
        if server.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the server did not start")


def run(config: str, args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory() as folder:
        env = _env(config, _database_url(config, args.pg_url, folder), args.redis_url)
        pk = _prepare(env)
        port = _free_port()
        server = subprocess.Popen(
            [str(VENV_BIN / "uvicorn"), "adkui.asgi:application", "--port", str(port), "--log-level", "warning",
             "--ws", "websockets-sansio"], cwd=ROOT, env=env)
        try:
            _wait_for_server(port, server)
            latencies = asyncio.run(_measure(args, env, pk, port))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(30)
    got = sorted(latencies.values())
    if not got:
        return f"{config:16} no push arrived of {args.events}"
    ms = [1000 * x for x in got]
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return (f"{config:16} {len(got):>4}/{args.events} arrived   p50 {statistics.median(ms):7.1f} ms   "
            f"p99 {p99:7.1f} ms   worst {ms[-1]:7.1f} ms")


def main() -> None:
    args = parse_args()
    if args.writer:
        write(args.events, args.gap)
        return
    print(f"push latency, append in a writer process -> row on the session page's websocket "
          f"({args.events} events, {args.gap * 1000:.0f} ms apart, DEBUG=0)")
    for config in args.config.split(","):
        print(run(config.strip(), args), flush=True)


if __name__ == "__main__":
    main()
