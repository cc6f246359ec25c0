from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.layers import channel_layers
from django.apps import apps as django_apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import QueryDict
from django.test.utils import override_settings
from django.utils.datastructures import MultiValueDict

from adkui.adk import DjangoSessionService
from adkui.settings import redis_channel_layer
from runtime_app import edit_continue, replay, runs
from runtime_app import services as runtime_services
from sessions_app import db_threads

CHROMIUM = os.environ.get("ADKUI_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]
RESULTS = Path(__file__).resolve().parent.parent / "test-results"


def wait_until(predicate: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.01,
               ignore: type[BaseException] | tuple[type[BaseException], ...] = (), message: str = "") -> Any:
    """Call `predicate` until it returns something truthy, and return that; fail
    after `timeout` seconds. Exceptions of the `ignore` types count as "not yet"."""
    deadline = time.monotonic() + timeout
    while True:
        error: BaseException | None = None
        try:
            result = predicate()
        except ignore as exc:
            result, error = None, exc
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(message or f"timed out after {timeout}s waiting for {predicate!r}") from error
        time.sleep(interval)


async def async_wait_until(predicate: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.01,
                           ignore: type[BaseException] | tuple[type[BaseException], ...] = (),
                           message: str = "") -> Any:
    """`wait_until` for async tests: `predicate` may be sync or return an awaitable,
    and the loop keeps running while it waits."""
    deadline = time.monotonic() + timeout
    while True:
        error: BaseException | None = None
        try:
            result = predicate()
            if inspect.isawaitable(result):
                result = await result
        except ignore as exc:
            result, error = None, exc
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(message or f"timed out after {timeout}s waiting for {predicate!r}") from error
        await asyncio.sleep(interval)


def close_worker_connections() -> None:
    # Async code reaches the database from asgiref's worker thread; close that
    # thread's connections so the test database can be flushed and dropped.
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
    db_threads.close_connections()  # and those of the session service's own threads


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A SQLite test database file of this run's own (each xdist worker has its
    own temp dir), so parallel runs never share one. A file, not :memory:, so
    the test server, worker threads and child processes all see it."""

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.getbasetemp() / "adkui-test.sqlite3")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's, and before it drops the test database, the session service's
    threads close their connections (PostgreSQL refuses to drop a database in use)."""
    yield
    db_threads.close_connections()


@pytest.fixture
def roles(db: None) -> None:
    """The groups as migration 0002 makes them: a transactional test's flush
    empties every table, and this puts them back (the migration's own code)."""
    migration = importlib.import_module("access.migrations.0002_roles")
    migration.create_roles(django_apps, SimpleNamespace(connection=SimpleNamespace(alias=DEFAULT_DB_ALIAS)))


@pytest.fixture
def on_commit_callbacks(django_capture_on_commit_callbacks: Any) -> Iterator[list[Callable[[], Any]]]:
    """For a test in a rolled-back transaction (`django_db` without
    transaction=True): the `transaction.on_commit` callbacks its writes
    registered still run, at the end of the test, as a commit would run them.
    A test that must see their effect sooner needs transaction=True."""
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        yield callbacks


@pytest.fixture
def query_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The keys the code reads from any QueryDict (a request's GET or POST) while the test
    runs: what a page or form takes, recorded rather than listed. Clear it between requests."""
    noted: set[str] = set()
    for name in ("get", "getlist", "__getitem__", "__contains__"):
        original = getattr(MultiValueDict, name)

        def noting(self: MultiValueDict, key: Any, *args: Any, _original: Any = original) -> Any:
            if isinstance(self, QueryDict) and isinstance(key, str):
                noted.add(key)
            return _original(self, key, *args)

        monkeypatch.setattr(MultiValueDict, name, noting)
    yield noted


@pytest.fixture
def service() -> Iterator[DjangoSessionService]:
    yield DjangoSessionService()
    close_worker_connections()


class LiveServer:
    """The ASGI app (HTTP + websockets) served by uvicorn in a thread of the
    test process, so it shares the in-memory channel layer with `call()`."""

    def __init__(self) -> None:
        import uvicorn

        from adkui.asgi import application

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(application, log_level="warning", lifespan="off", ws="websockets-sansio",
                                ws_per_message_deflate=False)
        self.server = uvicorn.Server(config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started or not self.thread.is_alive(), timeout=30,
                   message="the uvicorn test server did not start")
        if not self.server.started:
            raise RuntimeError("the uvicorn test server stopped before it started serving")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve(sockets=[self._socket]))

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run sync `fn` as the server would (its loop, its worker thread), so
        what it broadcasts reaches the server's websocket consumers."""
        future = asyncio.run_coroutine_threadsafe(sync_to_async(fn)(*args, **kwargs), self.loop)
        return future.result(timeout=60)

    def settle(self, timeout: float = 30) -> None:
        """Stop the runs a test started in the server and wait until their tasks
        are done, so none writes on into the flush that ends the test (on
        PostgreSQL its TRUNCATE and a run's inserts deadlock)."""
        for key in runs.running_sessions():
            runs.stop_run(key)
        pending = (runtime_services._background, replay._background, edit_continue._background)
        wait_until(lambda: not any(pending), timeout=timeout, message="a run the test started did not stop")

    def stop(self) -> None:
        self.call(connections.close_all)
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(autouse=True)
def _live_server_helper() -> None:
    """Replaces pytest-django's hook for its WSGI live server, which ours replaces."""


@pytest.fixture(scope="session")
def live_server(django_db_setup: None) -> Iterator[LiveServer]:
    server = LiveServer()
    yield server
    server.stop()


_playwright_started = False  # in this process: each xdist worker is a process of its own


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    global _playwright_started
    assert Path(CHROMIUM).exists(), f"Browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)."
    _playwright_started = True
    # Playwright's sync API keeps an event loop on this thread, so Django would
    # take every ORM call of the test for one made from async code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        RESULTS.mkdir(exist_ok=True)
        page.screenshot(path=str(RESULTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    if "live_server" in request.fixturenames:  # torn down before the database is flushed
        request.getfixturevalue("live_server").settle()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def pytest_configure(config: pytest.Config) -> None:
    # xdist workers share REDIS_URL but not their databases: session pks (and
    # so group names) repeat across workers, and a viewer in one would get
    # another's pushes. Each worker, and the servers and workers it starts,
    # gets a channel prefix of its own.
    prefix = f"adkui-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    os.environ["ADKUI_CHANNEL_PREFIX"] = prefix
    if settings.REDIS_URL:
        settings.CHANNEL_LAYERS = {"default": redis_channel_layer(settings.REDIS_URL)}
    # Eval cases are django-tasks: in tests they run where they are enqueued
    # (on commit of the run's creation), unless ADKUI_TASKS_BACKEND names a
    # backend. tests/eval_app/test_crash.py runs real `db_worker` processes.
    if not os.environ.get("ADKUI_TASKS_BACKEND"):
        override_settings(TASKS={"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}).enable()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop on the main thread for the rest
    # of the run once the browser starts, which async tests cannot share: run
    # the browser tests last.
    # Under xdist each worker is such a process: `--dist load` (the default
    # with -n) and `loadgroup` hand each worker its tests in this order.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _playwright_started and item.get_closest_marker("browser") is None:
        pytest.fail("A non-browser test was scheduled after this process started Playwright, whose event loop "
                    "breaks async code: run browser tests last (with xdist: --dist load or loadgroup, "
                    "not worksteal).", pytrace=False)


@pytest.fixture(autouse=True)
def fresh_channel_layer(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each coroutine test gets a channel layer of its own, dropped after it.

    Each async test has an event loop of its own, and the Redis layer's receive lock is bound
    to the loop that first waited on it. A consumer whose test ended can die holding that lock;
    the next test's receive then waits on a lock bound to a closed loop ("bound to a different
    event loop"), a failure that comes and goes with the order xdist gives the tests."""
    own_loop = inspect.iscoroutinefunction(getattr(request, "function", None))
    if own_loop:
        channel_layers.backends.clear()
    yield
    if own_loop:
        channel_layers.backends.clear()
