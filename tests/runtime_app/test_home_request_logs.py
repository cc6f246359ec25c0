"""Each request is logged once: under `manage.py up` (daphne) and in production (the Procfile's uvicorn).

Each server runs as its own process, as people start it, and the lines it
prints are counted: logging is set up per process, so only a process of its
own shows what a server prints.
"""
from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=10).status
    except urllib.error.HTTPError as exc:
        return exc.code


def answering(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Server:
    """A server process of the test's own, started as people start it."""

    def __init__(self, command: str, env: dict[str, str], port: int) -> None:
        self.process = subprocess.Popen(shlex.split(command), cwd=ROOT, env=os.environ | env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        wait_until(lambda: answering(port) or self.process.poll() is not None, timeout=120, interval=0.1)

    def stop(self) -> str:
        """Stop the server; everything it printed."""
        self.process.terminate()
        return self.process.communicate(timeout=30)[0]


def requests_once(output: str) -> None:
    for path in ("/static/adkui/adkui.css", "/missing/"):
        lines = [line for line in output.splitlines() if path in line]
        assert len(lines) == 1, f"{path} logged {len(lines)} times:\n{output}"


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def test_manage_py_up_logs_each_request_once(sqlite_url):
    port = free_port()
    # As the README shows it: a bare port, and an agents folder (a relative path).
    server = Server(f"{BIN / 'python'} manage.py up {port} --no-demo --agents-dir runtime_app/demo_agents",
                    {"DATABASE_URL": sqlite_url, "DEBUG": "1", "ADKUI_LOCAL_DEV": "1"}, port)
    try:
        assert get(f"{server.url}/static/adkui/adkui.css") == 200
        assert get(f"{server.url}/missing/") == 404
        home = urllib.request.urlopen(f"{server.url}/", timeout=30).read().decode()
    finally:
        output = server.stop()
    requests_once(output)
    assert "HTTP GET /missing/ 404" in output
    assert '<tr data-app="memory_demo">' in home and 'id="demo-missing"' in home  # --no-demo


def test_up_refuses_an_agents_dir_that_is_not_a_folder(tmp_path):
    with pytest.raises(CommandError, match="--agents-dir: no folder at"):
        call_command("up", "--agents-dir", str(tmp_path / "nowhere"))


def test_the_procfiles_uvicorn_logs_each_request_once(sqlite_url):
    port = free_port()
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    command = web.removeprefix("web:").replace("${PORT:-8000}", str(port)).replace("${WEB_CONCURRENCY:-2}", "1")
    command = command.replace("uvicorn ", f"{BIN / 'uvicorn'} ", 1)
    env = {"DATABASE_URL": sqlite_url, "DEBUG": "0", "ADKUI_LOCAL_DEV": "0", "SECRET_KEY": "test-only",
           "ALLOWED_HOSTS": "127.0.0.1", "SECURE_SSL_REDIRECT": "0", "LOG_FORMAT": "plain"}
    server = Server(command, env, port)
    try:
        assert get(f"{server.url}/static/adkui/adkui.css") == 200
        assert get(f"{server.url}/missing/") == 404
    finally:
        output = server.stop()
    requests_once(output)
    assert "uvicorn.access" in output  # through our handler, so LOG_FORMAT=json covers it too
