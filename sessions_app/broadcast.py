"""The only module that talks to the channel layer.

Services call these functions from `transaction.on_commit`, so nothing is
sent for a write that rolled back. A row is rendered once here, by the same
partial as the page, and every viewer gets that HTML. A push that fails (the
channel layer's Redis is down) is logged and dropped: it never fails the write
that caused it, and viewers catch up from the database when they reconnect.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.template.loader import render_to_string
from google.adk.events import Event as AdkEvent

from . import selectors, timeline
from .models import Event, Session

logger = logging.getLogger(__name__)


def session_group(session_pk: int) -> str:
    # Group names allow only ASCII letters, digits, -_. so use the pk, never ADK ids.
    return f"session.{session_pk}"


def app_group(app_pk: int) -> str:
    return f"app.{app_pk}"


def _has_listeners(layer: Any, group: str) -> bool:
    # The in-process layer knows its groups: with no viewer of this session
    # in this process, sending (and rendering) would be wasted work.
    if isinstance(layer, InMemoryChannelLayer):
        return bool(layer.groups.get(group))
    return True


def stream_key(event_id: str) -> str:
    """A DOM-safe key for the streamed row of an ADK event id (any string)."""
    return hashlib.sha1(event_id.encode()).hexdigest()[:16]


def send(group: str, message: dict[str, Any]) -> None:
    """Push `message` to `group`; a failure of the channel layer is logged, not raised.

    Also called outside any transaction (streamed partial events, a chat's run
    ending), where a raised error would break the run that is being shown.
    """
    layer = get_channel_layer()
    if layer is None or not _has_listeners(layer, group):
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # Redis down, refused or full: this push is lost, never the write
        logger.warning("Live push of %r to %s failed; viewers catch up when they reconnect.",
                       message.get("type"), group, exc_info=True)


def listened(group: str) -> bool:
    layer = get_channel_layer()
    return layer is not None and _has_listeners(layer, group)


def render_rows(session: Session, views: list[Any]) -> str:
    return "".join(
        render_to_string("sessions_app/partials/event_row.html", {"view": v, "session": session, "oob": True})
        for v in views
    )


CATCH_UP_LIMIT = 500
TOO_FAR_BEHIND = (
    '<div id="stream-notice" hx-swap-oob="true" class="card">Many events arrived while this page was '
    'disconnected. <a href="">Reload</a> to see them all.</div>'
)


@dataclass(frozen=True)
class CatchUp:
    revision: int  # the session's revision when read: frames cover (seq, revision]
    frames: list[str]


def catch_up(session: Session, seq: int, filters: selectors.Filters) -> CatchUp:
    """What a (re)connecting viewer missed after event `seq`: one frame per row,
    rendered as the live push renders them, led by a notice when too many to send."""
    revision = selectors.session_revision(session.pk)
    views = timeline.after(session, seq, upto=revision, filters=filters, limit=CATCH_UP_LIMIT + 1)
    frames = [render_rows(session, [v]) for v in views[:CATCH_UP_LIMIT]]
    if len(views) > CATCH_UP_LIMIT:
        frames.insert(0, TOO_FAR_BEHIND)
    return CatchUp(revision, frames)


def event_appended(*, event: Event) -> None:
    group = session_group(event.session_id)
    if not listened(group):
        return
    session = event.session
    view = timeline.views_for(session, [event])[0]
    html = render_rows(session, [view])
    send(group, {"type": "event.appended", "html": html, "stream_key": stream_key(event.event_id), **view.meta()})


def partial_event(*, session: Session, event: AdkEvent) -> None:
    """A streaming chunk: never stored, shown in place until its final event lands."""
    group = session_group(session.pk)
    if not listened(group):
        return
    context = {"view": timeline.partial_view(session, event), "key": stream_key(event.id)}
    send(group, {
        "type": "event.partial",
        "stream_key": context["key"],
        "first_html": render_to_string("sessions_app/partials/partial_row.html", context),
        "next_html": render_to_string("sessions_app/partials/partial_chunk.html", context),
    })


def session_created(*, session: Session) -> None:
    group = app_group(session.app_id)
    if listened(group):
        html = render_to_string("sessions_app/partials/session_row.html", {"s": session, "oob": True})
        send(group, {"type": "session.created", "html": html})


def session_deleted(*, session_pk: int) -> None:
    send(session_group(session_pk), {"type": "session.deleted", "pk": session_pk})
