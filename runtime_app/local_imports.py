"""Imports the home page starts: the `adk web` stores found in the agents folder.

`adk web` keeps each agent's sessions in `<agent>/.adk/session.db`. The home
page lists those stores with a button that imports one (`adk_import`) in a
thread of this process, optionally following it: polling for new events
until stopped. Jobs live in this process only, as chats do (`runs`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import close_old_connections

from lazy_imports import on_first_use

from . import agents
from .import_summary import ImportSourceError, ImportSummary

if TYPE_CHECKING:
    from . import adk_import
else:  # imported when an import runs (lazy_imports.py): ADK's SQL session services and SQLAlchemy
    adk_import = on_first_use("runtime_app.adk_import")  # cost the server's start ~0.3 CPU s

FOLLOW_INTERVAL = 2.0


@dataclass(frozen=True)
class LocalStore:
    app_name: str
    path: Path


@dataclass
class ImportJob:
    store: LocalStore
    follow: bool
    summary: ImportSummary = field(default_factory=ImportSummary)
    error: str = ""
    done: bool = False
    stop: threading.Event = field(default_factory=threading.Event)


class _Stopped(Exception):
    pass


_jobs: dict[str, ImportJob] = {}
_lock = threading.Lock()


def local_stores() -> list[LocalStore]:
    """Every `<agent>/.adk/session.db` in the agents folder, by agent name."""
    root = Path(agents.agents_dir())
    if not root.is_dir():
        return []
    return [LocalStore(folder.name, folder / ".adk" / "session.db")
            for folder in sorted(root.iterdir()) if (folder / ".adk" / "session.db").is_file()]


def jobs() -> dict[str, ImportJob]:
    with _lock:
        return dict(_jobs)


def import_start(*, app_name: str, follow: bool) -> ImportJob:
    """Import (and with `follow`, keep importing) the store of agent `app_name`."""
    store = next((s for s in local_stores() if s.app_name == app_name), None)
    if store is None:
        raise ImportSourceError(f"No `adk web` store for {app_name!r} in {agents.agents_dir()}.")
    with _lock:
        running = _jobs.get(app_name)
        if running is not None and not running.done:
            return running
        job = _jobs[app_name] = ImportJob(store, follow)
    threading.Thread(target=_run, args=(job,), name=f"adkui-import-{app_name}", daemon=True).start()
    return job


def import_stop(*, app_name: str) -> None:
    job = jobs().get(app_name)
    if job is not None:
        job.stop.set()


def _run(job: ImportJob) -> None:
    def wait(seconds: float) -> None:
        if job.stop.wait(seconds):
            raise _Stopped

    try:
        adk_import.import_source(str(job.store.path), app=job.store.app_name, follow=job.follow,
                                 interval=FOLLOW_INTERVAL, summary=job.summary, sleep=wait)
    except _Stopped:
        pass
    except ImportSourceError as exc:
        job.error = str(exc)
    except Exception as exc:  # a failed import must show on the page, not kill the server
        job.error = f"{type(exc).__name__}: {exc}"
    finally:
        job.done = True
        close_old_connections()
