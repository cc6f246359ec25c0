"""How ADK names a session, a value every app passes around."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionKey:
    """How ADK names a session: app, user and the session's own id."""

    app_name: str
    user_id: str
    session_id: str
