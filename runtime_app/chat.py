"""What the chat panel shows for a session: the agent's state and this process's runs of it."""
from __future__ import annotations

from typing import Any

from sessions_app import selectors
from sessions_app.models import Session

from . import agents, runs
from .forms import ChatForm


def chat_context(session: Session, form: ChatForm | None = None) -> dict[str, Any]:
    key = session.key
    loaded = agents.load(key.app_name) if key.app_name in agents.agent_names() else None
    return {
        "session": session,
        "chat_form": form or ChatForm(),
        "agent_error": None if loaded is None or loaded.ok else loaded.error,
        "has_agent": loaded is not None and loaded.ok,
        "running": bool(runs.running_invocations(key)),
        "unfinished": selectors.unfinished_invocation(session),
    }
