"""Reads for the home dashboard: apps and their agents, recent and running
sessions, sessions needing attention, eval runs, and the way into the demo.

Every list is bounded and every query fixed in number, so the page costs the
same with ten sessions or ten thousand.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any

from django.conf import settings
from django.db.models import Q

from eval_app import selectors as eval_selectors
from sessions_app import selectors as session_selectors
from sessions_app.models import App, Session

from . import agents, demo, runs

RECENT_SESSIONS = 10
ATTENTION_SESSIONS = 10
RUNNING_SESSIONS = 20
EVAL_ROWS = 10


@dataclass(frozen=True)
class AppRow:
    name: str
    app: App | None
    sessions: int
    agent: agents.LoadedAgent | None  # None: sessions only, no agent in the agents folder
    phrases: list[demo.Phrase]


def dashboard(*, show_eval: bool = False) -> dict[str, Any]:
    """`show_eval`: eval runs' sandbox apps and sessions too (hidden by default)."""
    sessions = session_selectors.without_sandboxes(Session.objects.all(), sandboxes=show_eval)
    attention = sessions.needing_attention()
    return {
        "show_eval": show_eval,
        "rows": app_rows(show_eval=show_eval),
        "recent_sessions": list(_with_app(sessions)[:RECENT_SESSIONS]),
        "running_sessions": running_sessions(show_eval=show_eval),
        "attention_sessions": list(_with_app(attention)[:ATTENTION_SESSIONS]),
        "attention_total": attention.count(),
        "eval_runs_in_progress": eval_selectors.runs_in_progress(limit=EVAL_ROWS),
        "eval_latest": eval_selectors.latest_run_per_set(limit=EVAL_ROWS),
        "demo_session": demo.demo_session(),
        "adkui_uri": adkui_uri(),
    }


def adkui_uri() -> str:
    """The `adkui:` URI (adkui.schemes) that names this server's database
    wherever ADK's tools run; a password stays out of the page."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"adkui:sqlite:///{db['NAME']}"
    user = f"{db['USER']}@" if db.get("USER") else ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"adkui:postgres://{user}{db.get('HOST') or 'localhost'}{port}/{db['NAME']}"


def app_rows(*, show_eval: bool = False) -> list[AppRow]:
    """Every stored app (sandboxes only with `show_eval`) and every agent of the agents folder, with its load status."""
    stored = session_selectors.apps_by_name(sandboxes=show_eval)
    loaded = {agent.name: agent for agent in agents.load_all()}
    counts = session_selectors.session_counts(sandboxes=show_eval)
    return [
        AppRow(name, stored.get(name), counts.get(name, 0), loaded.get(name),
               demo.scripted_phrases(loaded[name].root) if name in loaded and loaded[name].ok else [])
        for name in sorted(set(stored) | set(loaded))
    ]


def running_sessions(*, show_eval: bool = False) -> list[Session]:
    """Sessions whose chat runs in this process now, newest first (one query)."""
    keys = runs.running_sessions()[:RUNNING_SESSIONS]
    if not keys:
        return []
    match = reduce(or_, (Q(app__name=k.app_name, user_id=k.user_id, session_id=k.session_id) for k in keys))
    return list(_with_app(session_selectors.without_sandboxes(Session.objects.filter(match), sandboxes=show_eval)))


def _with_app(sessions: Any) -> Any:
    # State can be large (ADKUI_MAX_STATE_BYTES per write) and the page shows none of it.
    return sessions.select_related("app").defer("state", "import_conflicts").order_by("-update_time", "-pk")
