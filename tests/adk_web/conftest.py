"""ADK's own server (its FastAPI app, `adk web`'s) on a copy of our demo agents, to hold our answers against.

Built once per test module: ADK's app installs a process-wide OpenTelemetry
tracer provider that cannot be replaced, so one per process is all there can be.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from google.adk.cli.fast_api import get_fast_api_app

from tests.conftest import close_worker_connections

DEMO_AGENTS = Path(__file__).resolve().parents[2] / "runtime_app" / "demo_agents"
APP = "trip_planner"


@pytest.fixture(scope="session")
def adk_app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # A copy: ADK's server keeps its eval sets and results in the agents' folders.
    agents = tmp_path_factory.mktemp("adk") / "agents"
    shutil.copytree(DEMO_AGENTS, agents, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return get_fast_api_app(agents_dir=str(agents), web=True, session_service_uri="memory://",
                            artifact_service_uri="memory://", memory_service_uri="memory://")


@pytest.fixture(scope="session")
def adk(adk_app: Any) -> Iterator[TestClient]:
    """ADK's server as `adk web` serves its own machine: dev routes on (a loopback caller)."""
    with TestClient(adk_app, client=("127.0.0.1", 50000), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="session")
def adk_remote(adk_app: Any) -> Iterator[TestClient]:
    """ADK's server as another machine sees it: its agent builder and deploy routes off."""
    with TestClient(adk_app, client=("192.0.2.7", 50000), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def eval_worker() -> Iterator[None]:
    """For a test that runs evals: close what the eval worker's thread opened, so the test
    database can be flushed."""
    yield
    close_worker_connections()


def shape(value: Any) -> Any:
    """A JSON value's shape: every key, recursively, and the type of every leaf (lists by
    their first item), so two answers with different ids and times compare equal."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return "str"


def body(response: Any) -> Any:
    """The JSON of a Django or an httpx response, streamed or not."""
    return json.loads(content(response))


def content(response: Any) -> bytes:
    """A response's bytes; a Django response streamed from async code is read to its end here."""
    if getattr(response, "streaming", False):
        return b"".join(response)
    return response.content


def sse_events(content: bytes | str) -> list[dict[str, Any]]:
    text = content.decode() if isinstance(content, bytes) else content
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]
