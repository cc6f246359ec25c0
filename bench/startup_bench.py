"""Start-up benchmark: how long a fresh process takes before it is of use.

    .venv/bin/python bench/startup_bench.py [--runs 5] [--top 15]

Each figure is the wall time of a fresh subprocess (median of --runs, with the
fastest and slowest; and the CPU seconds it used, which other work on the
machine changes less), in the dev configuration `manage.py up` serves (DEBUG
and local dev on) on a throwaway SQLite file that is migrated once beforehand:

- `django.setup()` alone (what every process pays: workers, scripts, shells);
- `import adkui.asgi`: what the server loads before it serves (the URLconf and
  every view and API it names, ADK's core with them; see lazy_imports.py);
- `manage.py check` (imports the URLconf, which names the views without
  importing them, and every template tag library) and `manage.py help`;
- `manage.py up 0.0.0.0:8999`: until it exits with its refusal (local dev serves
  only on localhost);
- `manage.py db_worker`: until it logs "Starting worker", as the Procfile runs it
  (checks on; no autoreloader, as with DEBUG off) and as `manage.py up` does
  (`--skip-checks`: up has just run them);
- `manage.py up --no-demo PORT`: from the spawn to the first 200 on `/` (with
  the CPU seconds the server's process had used by then; its task worker runs
  beside it), from the server's start (its "Starting ASGI/Daphne" line, after
  the checks and migrations, before it imports the ASGI application and the
  views) to that 200, how long that first request itself took (then the second,
  for comparison); the server and its task worker are stopped with SIGTERM
  after each run;
- `python -X importtime`: the modules that cost most when the server imports
  its application, views included (Python does not time modules imported by
  `importlib.import_module`, such as each app's urls and views: their imports
  are listed as the program's).

The load average is printed: the wall times are only comparable at a like load.
"""
from __future__ import annotations

import argparse
import http.client
import os
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANAGE = str(ROOT / "manage.py")
TMP = Path(tempfile.mkdtemp(prefix="adkui-startup-bench-"))
ENV = {
    **os.environ,
    # The project folder first, so `python -c` imports this checkout (not another one installed editable).
    "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    "DJANGO_SETTINGS_MODULE": "adkui.settings",
    "DATABASE_URL": os.environ.get("DATABASE_URL") or f"sqlite:///{TMP / 'adkui.sqlite3'}",
    "ADKUI_MEDIA_ROOT": str(TMP / "media"),
    "DEBUG": "1",
    "ADKUI_LOCAL_DEV": "1",
}
SETUP = "import django; django.setup()"
ASGI = "import adkui.asgi"
SERVER_TIMEOUT = 120.0


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], *, expect_ok: bool = True, expect_text: str = "") -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a fresh process running `args`."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = _run(args)
    elapsed = time.perf_counter() - start
    if expect_ok and done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if expect_text and expect_text not in done.stdout + done.stderr:
        raise SystemExit(f"{' '.join(args)}: expected {expect_text!r}, got:\n{done.stderr[-2000:]}")
    return elapsed, _children_cpu() - cpu


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)  # `up` stops its task worker with it
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_for_line(process: subprocess.Popen, text: str, start: float) -> float:
    """Seconds from `start` until the process prints a line containing `text` (stdout or stderr)."""
    watch = selectors.DefaultSelector()
    for stream in (process.stdout, process.stderr):
        os.set_blocking(stream.fileno(), False)
        watch.register(stream, selectors.EVENT_READ)
    seen = ""
    while time.perf_counter() - start < SERVER_TIMEOUT:
        for key, _ in watch.select(timeout=0.05):
            seen += key.fileobj.read() or ""
        if text in seen:
            return time.perf_counter() - start
        if process.poll() is not None:
            raise SystemExit(f"exited ({process.returncode}) before {text!r}:\n{seen[-2000:]}")
    raise SystemExit(f"no {text!r} within {SERVER_TIMEOUT:.0f} s:\n{seen[-2000:]}")


def worker_once(*options: str) -> tuple[float, float]:
    cpu, start = _children_cpu(), time.perf_counter()
    worker = subprocess.Popen([sys.executable, MANAGE, "db_worker", "--no-reload", *options], cwd=ROOT, env=ENV,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = _wait_for_line(worker, "Starting worker", start)
    finally:
        _stop(worker)
    return ready, _children_cpu() - cpu


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(port: int, path: str = "/") -> tuple[int, float]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - start
    finally:
        conn.close()


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def serve_once() -> tuple[float, float, float, float, float]:
    """(spawn → first 200 on /, server start → that 200, that request's own time, the second's,
    the server process's CPU seconds at that 200)."""
    port = _free_port()
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, MANAGE, "up", "--no-demo", str(port)], cwd=ROOT, env=ENV,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        serving = _wait_for_line(server, "Starting ASGI/Daphne", start)
        while time.perf_counter() - start < SERVER_TIMEOUT:
            if server.poll() is not None:
                raise SystemExit(f"manage.py up exited ({server.returncode}):\n{server.stderr.read()[-2000:]}")
            try:
                status, first = _get(port)
            except OSError:  # not listening yet
                time.sleep(0.02)
                continue
            if status == 200:
                ready, cpu = time.perf_counter() - start, _process_cpu(server.pid)
                return ready, ready - serving, first, _get(port)[1], cpu
            raise SystemExit(f"GET / answered {status}")
        raise SystemExit(f"no 200 on / within {SERVER_TIMEOUT:.0f} s")
    finally:
        _stop(server)


def importtime_top(n: int) -> list[tuple[float, float, str]]:
    """The n costliest imports of the server loading its application: (cumulative s, self s, module),
    modules imported directly by the program or by a module of ours (the ones we choose)."""
    done = _run([sys.executable, "-X", "importtime", "-c", ASGI])
    ours = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} | {"adk_compat", "lazy_imports"}
    rows, parent_is_ours = [], {}
    for line in reversed(done.stderr.splitlines()):  # importtime prints children before their parent
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2  # one space after "|", two per level
        module = name.strip()
        parent_is_ours[depth] = module.split(".")[0] in ours
        if depth == 0 or parent_is_ours.get(depth - 1):
            rows.append((int(cumulative_us) / 1e6, int(self_us) / 1e6, module))
    return sorted(rows, reverse=True)[:n]


def row(name: str, times: list[float], cpu: list[float] | None = None) -> str:
    cpu_text = f"{statistics.median(cpu):>9.2f}" if cpu else f"{'':>9}"
    return f"{name:46}{statistics.median(times):>9.2f}{min(times):>9.2f}{max(times):>9.2f}{cpu_text}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    timed([sys.executable, MANAGE, "migrate", "--verbosity", "0"])  # once: `up` then finds nothing to do
    measures: list[tuple[str, Callable[[], tuple[float, float]]]] = [
        ("python -c 'django.setup()'", lambda: timed([sys.executable, "-c", SETUP])),
        ("python -c 'import adkui.asgi' (server's app)", lambda: timed([sys.executable, "-c", ASGI])),
        ("manage.py check", lambda: timed([sys.executable, MANAGE, "check"])),
        ("manage.py help", lambda: timed([sys.executable, MANAGE, "help"])),
        ("manage.py up 0.0.0.0:8999 (refusal)", lambda: timed(
            [sys.executable, MANAGE, "up", "0.0.0.0:8999"], expect_ok=False, expect_text="Local dev mode")),
        ("manage.py db_worker --no-reload", worker_once),
        ("  --skip-checks (as manage.py up starts it)", lambda: worker_once("--skip-checks")),
    ]
    results: dict[str, list[tuple[float, float]]] = {}
    served: list[tuple[float, float, float, float, float]] = []
    for _ in range(args.runs):
        for name, measure in measures:
            results.setdefault(name, []).append(measure())
        served.append(serve_once())
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.runs} runs; "
          f"{ENV['DATABASE_URL'].split(':')[0]}")
    print(f"{'seconds':46}{'median':>9}{'min':>9}{'max':>9}{'CPU':>9}")
    for name, pairs in results.items():
        print(row(name, [wall for wall, _ in pairs], [cpu for _, cpu in pairs]))
    labels = ["manage.py up --no-demo: spawn to first 200 on /", "  server start to that 200",
              "  the first request itself", "  the second request"]
    for i, label in enumerate(labels):
        print(row(label, [s[i] for s in served], [s[4] for s in served] if i == 0 else None))
    print(f"\npython -X importtime, the server loading its application (import adkui.asgi): top {args.top} "
          "(imported by the program or by our modules)")
    print(f"{'cumulative s':>13}{'self s':>9}  module")
    for cumulative, own, module in importtime_top(args.top):
        print(f"{cumulative:>13.2f}{own:>9.2f}  {module}")


if __name__ == "__main__":
    main()
