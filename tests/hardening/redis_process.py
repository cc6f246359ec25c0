"""A redis-server of a test's own, on a free port, that the test may kill.

Never the machine's shared Redis (6379): other tests and people use it.
"""
from __future__ import annotations

import shutil
import socket
import subprocess

from tests.conftest import wait_until

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisProcess:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start (or restart, on the same port) with nothing kept on disk."""
        assert REDIS_SERVER, "redis-server is not installed"
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._answers, timeout=15, interval=0.05, message=f"redis-server on port {self.port} did not start")

    def kill(self) -> None:
        """SIGKILL (kill -9): Redis dies as in a crash, without closing anything cleanly."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def _answers(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"redis-server on port {self.port} exited")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False
