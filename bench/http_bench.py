"""HTTP benchmark: the session page and event ingest under concurrent clients,
against the production command (the Procfile's `web` line: uvicorn, N workers,
DEBUG=0, logins on, PostgreSQL + Redis).

Seeds a session of --events events through the session service (turns of a user
message, two tool calls and their responses, a markdown reply; state deltas in
every scope, token usage), kept for later runs of the same size; logs a user in
(an editor, as production asks) and gives it an API token; then runs --clients
concurrent clients for --duration seconds per scenario (after a warm-up that
is not counted) and prints requests/s, p50, p99 and the server's CPU time per
request (its processes' user + system time, Linux only):

- `page`:   GET /sessions/<pk>/ (the whole session page, as a browser asks for it)
- `ingest`: POST /api/apps/<app>/users/<user>/sessions/<id>/events (token auth),
            into a new empty session of its own

    python bench/http_bench.py [--db postgres|sqlite|both] [--clients 20] [--duration 10]
                               [--events 500] [--workers 2] [--scenario page,ingest]

PostgreSQL: --pg-url (default postgres://postgres@127.0.0.1:5432/h_http, created
if missing) with Redis --redis-url (default redis://127.0.0.1:6379/8); SQLite: a
fresh file in a temporary folder and the in-process channel layer (the default
install). Requests carry `X-Forwarded-Proto: https`, as behind the TLS proxy
production runs behind (BEHIND_TLS_PROXY=1), so HTTPS redirects, HSTS and secure
cookies stay on. The API's per-user rate limit is turned off
(ADKUI_THROTTLE_USER=""), else it, not the server, would cap the ingest figure.
The clients run in this process (httpx): on a 2-core machine they share the
CPU with the server, as `wrk` would.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
APP, USER = "trip_planner", "bench-user"
HEADERS = {"X-Forwarded-Proto": "https", "Host": "127.0.0.1"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="postgres")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per scenario")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of unmeasured load first")
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scenario", default="page,ingest")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/h_http")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/8")
    parser.add_argument("--keep-server", action="store_true", help="print the server's pid and wait (for py-spy)")
    return parser.parse_args()


def server_env(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    env = {
        "DEBUG": "0",
        "ADKUI_LOCAL_DEV": "0",
        "SECRET_KEY": "http-bench-only-not-a-secret-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "BEHIND_TLS_PROXY": "1",
        "ADKUI_THROTTLE_USER": "",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    if args.db == "postgres":
        env["DATABASE_URL"] = args.pg_url
        env["REDIS_URL"] = args.redis_url
    else:
        env["DATABASE_URL"] = f"sqlite:///{tmp / 'adkui.sqlite3'}"
    return env


def create_pg_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')


# ---- seeding (in this process, on the server's database) ----------------------


def make_turn(turn: int):
    """One turn, six events: the user asks, the model calls a tool, the tool
    answers (writing state), the model calls another, it answers, then the
    model replies in markdown (writing state)."""
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    inv = f"inv-{turn}"
    city = ["Paris", "Lisbon", "Oslo", "Kyoto"][turn % 4]
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=900 + turn, candidates_token_count=40,
                                                       total_token_count=940 + turn)

    def model(parts, **kw):
        return Event(author="trip_planner", invocation_id=inv, content=types.Content(role="model", parts=parts),
                     model_version="gemini-2.5-flash", usage_metadata=usage, **kw)

    call_id = f"call-{turn}"
    return [
        Event(author="user", invocation_id=inv,
              content=types.Content(role="user", parts=[types.Part(text=f"Plan a trip to {city}, turn {turn}")])),
        model([types.Part(function_call=types.FunctionCall(id=call_id, name="plan_trip", args={"city": city}))]),
        Event(author="trip_planner", invocation_id=inv,
              content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                  id=call_id, name="plan_trip", response={"status": "ok", "destination": city, "trips_planned": turn}))]),
              actions=EventActions(state_delta={"destination": city, "user:trips_planned": turn,
                                                "user:last_destination": city, "app:popular_city": city})),
        model([types.Part(function_call=types.FunctionCall(id=call_id + "w", name="get_weather", args={"city": city}))]),
        Event(author="trip_planner", invocation_id=inv,
              content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                  id=call_id + "w", name="get_weather", response={"status": "ok", "city": city, "forecast": "sunny"}))])),
        model([types.Part(text=(f"## {city}, turn {turn}\n\nThe weather is **sunny**. A plan:\n\n"
                                "1. Museum in the morning\n2. Lunch by the river\n3. `walk` in the old town\n\n"
                                + "Some more words about the trip. " * 8))],
              actions=EventActions(state_delta={"last_reply_turn": turn, "itinerary": {"days": [city] * 3}})),
    ]


def seed(events: int) -> tuple[int, str, str, str]:
    """The page's session of `events` events, a new empty session to ingest into,
    an editor's token and a logged-in browser session."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from adkui.adk import DjangoSessionService
    from sessions_app.models import Session as SessionRow

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves hashed files (the release line)
    user, _ = User.objects.get_or_create(username="http-bench")
    call_command("grant_role", "http-bench", "editor", stdout=open(os.devnull, "w"))
    token, _ = Token.objects.get_or_create(user=user)
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value

    page_id = page_session(events)
    ingest_id = f"bench-ingest-{int(time.time() * 1000)}"
    DjangoSessionService().create_session_sync(app_name=APP, user_id=USER, session_id=ingest_id)
    pk = SessionRow.objects.get(app__name=APP, user_id=USER, session_id=page_id).pk
    return pk, ingest_id, token.key, cookie


def page_session(events: int) -> str:
    """The id of the session the page scenario shows: kept from an earlier run when
    it has exactly `events` events (seeding through the service takes a while)."""
    from adkui.adk import DjangoSessionService
    from sessions_app.models import Session as SessionRow

    session_id = f"bench-page-{events}"
    existing = SessionRow.objects.filter(app__name=APP, user_id=USER, session_id=session_id).first()
    if existing is not None and existing.revision == events:
        return session_id
    service = DjangoSessionService()
    if existing is not None:
        service.delete_session_sync(app_name=APP, user_id=USER, session_id=session_id)
    adk = service.create_session_sync(app_name=APP, user_id=USER, session_id=session_id,
                                      state={"destination": None, "notes": "seeded by bench/http_bench.py"})
    turn = 0
    while len(adk.events) < events:
        for event in make_turn(turn)[: events - len(adk.events)]:
            service.append_event_sync(adk, event)
        turn += 1
    return session_id


# ---- the server ---------------------------------------------------------------


def web_command() -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("web:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit("The Procfile has no web line.")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict[str, str], workers: int, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    full_env = {**os.environ, **env, "PORT": str(port), "WEB_CONCURRENCY": str(workers)}
    proc = subprocess.Popen(["sh", "-c", "exec " + web_command()], cwd=ROOT, env=full_env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    return proc, port


def wait_ready(proc: subprocess.Popen, port: int, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 180  # a loaded machine starts workers slowly
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", headers=HEADERS, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer /healthz in 180 s:\n{log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# ---- the load -----------------------------------------------------------------


async def load(make_request, clients: int, seconds: float) -> tuple[list[float], dict[int, int], float]:
    """`clients` loops calling `make_request(client)` for `seconds`: latencies (ms), status counts, wall time."""
    import httpx

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        start = time.perf_counter()
        end = start + seconds

        async def one() -> None:
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                response = await make_request(http)
                latencies.append((time.perf_counter() - t0) * 1000)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        await asyncio.gather(*(one() for _ in range(clients)))
        wall = time.perf_counter() - start
    return latencies, statuses, wall


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU of the server process and its workers so far (Linux /proc), 0 elsewhere."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):  # fields[1]: the parent's pid
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def scenarios(base: str, pk: int, ingest_id: str, token: str, cookie: str):
    from django.conf import settings

    page_headers = {**HEADERS, "Cookie": f"{settings.SESSION_COOKIE_NAME}={cookie}", "Accept-Encoding": "gzip"}
    api_headers = {**HEADERS, "Authorization": f"Token {token}", "Content-Type": "application/json"}
    ingest_url = f"{base}/api/apps/{APP}/users/{USER}/sessions/{ingest_id}/events"
    counter = iter(range(10**9))

    async def page(http):
        return await http.get(f"{base}/sessions/{pk}/", headers=page_headers)

    async def ingest(http):
        n = next(counter)
        body = ('{"author": "bench", "invocationId": "ingest-%d", "content": {"role": "model", "parts": '
                '[{"text": "ingested event %d"}]}, "actions": {"stateDelta": {"ingested": %d, "user:ingested": %d}}}'
                % (n // 10, n, n, n))
        return await http.post(ingest_url, content=body, headers=api_headers)

    return {"page": (page, 200), "ingest": (ingest, 201)}


def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="adkui-http-bench-"))
    env = server_env(args, tmp)
    if args.db == "postgres":
        create_pg_database(args.pg_url)
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connections

    seeded = time.perf_counter()
    pk, ingest_id, token, cookie = seed(args.events)
    connections.close_all()
    print(f"[{args.db}] a {args.events}-event session ready in {time.perf_counter() - seeded:.1f} s; "
          f"{args.workers} workers: {web_command()}", flush=True)
    log = tmp / "server.log"
    proc, port = start_server(env, args.workers, log)
    try:
        wait_ready(proc, port, log)
        if args.keep_server:
            print(f"server pid {proc.pid} on port {port}, session pk {pk}; Ctrl-C to stop", flush=True)
            proc.wait()
        jobs = scenarios(f"http://127.0.0.1:{port}", pk, ingest_id, token, cookie)
        for name in [s.strip() for s in args.scenario.split(",") if s.strip()]:
            make_request, ok_status = jobs[name]
            warmed = 0
            while warmed < 4 * args.clients:  # each worker's first requests import the views and templates
                warmed += len(asyncio.run(load(make_request, args.clients, args.warmup))[0])
            cpu = server_cpu_seconds(proc.pid)
            latencies, statuses, wall = asyncio.run(load(make_request, args.clients, args.duration))
            cpu_ms = (server_cpu_seconds(proc.pid) - cpu) * 1000 / max(len(latencies), 1)
            bad = {s: n for s, n in statuses.items() if s != ok_status}
            print(f"[{args.db}] {name:<6} {args.clients} clients {args.duration:.0f} s: "
                  f"{len(latencies) / wall:7.1f} requests/s  p50 {percentile(latencies, 0.5):7.1f} ms  "
                  f"p99 {percentile(latencies, 0.99):7.1f} ms  server CPU {cpu_ms:5.1f} ms/request  (n={len(latencies)}"
                  + (f", NOT {ok_status}: {bad}" if bad else "") + ")", flush=True)
            if bad:
                tail = re.sub(r"\n{2,}", "\n", log.read_text()[-2000:])
                print(f"  server log tail:\n{tail}")
    finally:
        stop_server(proc)


def main() -> None:
    args = parse_args()
    if args.db == "both":
        for db in ("postgres", "sqlite"):
            argv = [a for a in sys.argv[1:] if a not in ("--db", "both")]
            subprocess.run([sys.executable, __file__, "--db", db, *argv], check=True)
        return
    run(args)


if __name__ == "__main__":
    main()
