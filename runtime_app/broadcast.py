"""The runtime's live messages; sent through sessions_app's channel-layer module.

Rendered once here and fanned out: every viewer of the session gets the same HTML.
"""
from __future__ import annotations

from django.template.loader import render_to_string

from sessions_app import broadcast as session_broadcast
from sessions_app.models import Session

from .chat import chat_context


def run_finished(*, session: Session, error: str | None) -> None:
    """The chat's run ended: viewers refresh the chat status (and resume offer)."""
    session_broadcast.activity()  # the home page's "running now"
    group = session_broadcast.session_group(session.pk)
    if session_broadcast.listened(group):
        context = chat_context(session) | {"oob": True, "run_error": error}
        html = render_to_string("runtime_app/partials/chat_status.html", context)
        session_broadcast.send(group, {"type": "run.finished", "html": html})
