"""The session service's thread pool: calls one after another stay on one thread."""
from __future__ import annotations

import gc
import os
import signal
import threading
import weakref

import pytest

from sessions_app.db_threads import HotFirstPool


def _busy_threads(pool: HotFirstPool, count: int) -> tuple[list, threading.Event]:
    """`count` calls that hold their threads until the returned event is set."""
    release, started = threading.Event(), threading.Barrier(count + 1)

    def hold() -> str:
        started.wait(timeout=10)
        release.wait(timeout=10)
        return threading.current_thread().name

    futures = [pool.submit(hold) for _ in range(count)]
    started.wait(timeout=10)
    return futures, release


def test_calls_one_after_another_run_on_the_thread_that_went_idle_last():
    pool = HotFirstPool(4, "t")
    futures, release = _busy_threads(pool, 4)  # all four threads started
    release.set()
    names = {f.result(timeout=10) for f in futures}
    assert len(names) == 4
    ran_on = [pool.submit(lambda: threading.current_thread().name).result(timeout=10) for _ in range(20)]
    assert len(set(ran_on)) == 1  # a pool whose idle threads share one queue goes round them all


def test_concurrent_calls_spread_over_the_threads_and_the_rest_wait_in_line():
    pool = HotFirstPool(3, "t")
    futures, release = _busy_threads(pool, 3)
    later = [pool.submit(lambda i=i: (i, threading.current_thread().name)) for i in range(5)]
    assert not any(f.done() for f in later)  # no fourth thread
    release.set()
    assert len({f.result(timeout=10) for f in futures}) == 3
    assert [f.result(timeout=10)[0] for f in later] == list(range(5))  # in the order they came
    assert {f.result()[1] for f in later} <= {f.result() for f in futures}


def test_a_calls_exception_reaches_its_caller_and_the_thread_serves_on():
    pool = HotFirstPool(1, "t")
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=10)
    assert pool.submit(lambda x, y=0: x + y, 2, y=3).result(timeout=10) == 5


def test_a_call_cancelled_while_waiting_does_not_run():
    pool = HotFirstPool(1, "t")
    futures, release = _busy_threads(pool, 1)
    ran = []
    waiting = pool.submit(ran.append, 1)
    assert waiting.cancel()
    release.set()
    futures[0].result(timeout=10)
    assert pool.submit(lambda: "next").result(timeout=10) == "next"
    assert ran == []


def test_an_idle_thread_keeps_nothing_of_its_last_call_alive():
    class Payload:
        pass

    pool = HotFirstPool(1, "t")
    payload = Payload()
    ref = weakref.ref(payload)
    future = pool.submit(lambda p: None, payload)
    future.result(timeout=10)
    del payload, future
    gc.collect()
    assert ref() is None


def test_a_forked_child_starts_threads_of_its_own():
    pool = HotFirstPool(2, "t")
    assert pool.submit(lambda: 1).result(timeout=10) == 1  # a thread now idle, in this process only
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit code is the assertion
        signal.alarm(10)  # a child stuck on a lock held at the fork dies of it
        try:
            ok = pool.submit(lambda: 2).result(timeout=10) == 2
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_thread_that_cannot_start_fails_its_call_and_is_not_counted(monkeypatch):
    pool = HotFirstPool(1, "t")
    start = threading.Thread.start

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: 1)
    monkeypatch.setattr(threading.Thread, "start", start)
    assert pool.submit(lambda: 2).result(timeout=10) == 2  # not left waiting for a thread it never had
