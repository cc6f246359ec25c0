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
import sys
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.template.loader import render_to_string
from google.adk.events import Event as AdkEvent

from . import selectors, timeline
from .relay import relayed
from .models import Event, Session

logger = logging.getLogger(__name__)


def session_group(session_pk: int) -> str:
    # Group names allow only ASCII letters, digits, -_. so use the pk, never ADK ids.
    return f"session.{session_pk}"


def app_group(app_pk: int) -> str:
    return f"app.{app_pk}"


# Pages that summarise every app (the home page) listen here for any change
# to what they count: a session made, changed or deleted, an eval run moving.
ACTIVITY_GROUP = "activity"
# At most one ping per this many seconds from a process: a summary page reloads
# no sooner than this after a ping (runtime_app.consumers.REFRESH_DELAY), so
# that reload reads the changes whose pings were skipped; and an append does not
# pay a Redis round trip for the home page each time.
ACTIVITY_EVERY = 0.5
_last_activity = 0.0


def activity() -> None:
    """Tell the summary pages that something they show may have changed."""
    global _last_activity
    now = time.monotonic()
    if now - _last_activity < ACTIVITY_EVERY:
        return
    _last_activity = now
    if listened(ACTIVITY_GROUP):
        send(ACTIVITY_GROUP, {"type": "activity.changed"})


def _has_local_listeners(layer: Any, group: str) -> bool:
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
    if layer is None or not _has_local_listeners(layer, group):
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # Redis down, refused or full: this push is lost, never the write
        logger.warning("Live push of %r to %s failed; viewers catch up when they reconnect.",
                       message.get("type"), group, exc_info=True)


def listened(group: str) -> bool:
    """Whether `group` has a member anywhere (see `_has_members`): render only then.

    An append nobody watches (an API ingest, an agent run in a closed tab) then
    costs no rendering and no message; the Redis layer is asked in one round trip.
    """
    layer = get_channel_layer()
    if layer is None:
        return False
    if isinstance(layer, InMemoryChannelLayer):  # no need to leave this thread
        return _has_local_listeners(layer, group)
    return async_to_sync(_has_members)(layer, group)


def render_rows(session: Session, views: list[Any]) -> str:
    return "".join(
        render_to_string("sessions_app/partials/event_row.html", {"view": v, "session": session, "oob": True})
        for v in views
    )


def render_updates(session: Session, updates: timeline.Updates) -> list[dict[str, Any]]:
    """Out-of-band swaps for rows a page may already show (see `timeline.Updates`),
    each with the metadata of the row it changes (None: several rows), so that a
    viewer gets only those for rows its filters show."""
    rendered = [
        {"html": render_to_string("sessions_app/partials/row_paired.html", {"view": view}), "meta": view.meta()}
        for view in updates.answered
    ]
    if updates.rewound:
        html = render_to_string("sessions_app/partials/row_rewound.html", {"seqs": updates.rewound})
        rendered.append({"html": html, "meta": None})
    return rendered


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
        return CatchUp(revision, [TOO_FAR_BEHIND, *frames])
    # Rows the viewer already has may have been paired or rewound meanwhile.
    updates = render_updates(session, timeline.updates_after(session, seq, upto=revision, limit=CATCH_UP_LIMIT))
    marks = "".join(u["html"] for u in updates if u["meta"] is None or filters.matches(u["meta"]))
    return CatchUp(revision, [*frames, marks] if marks else frames)


@relayed
def event_appended(*, event: Event) -> None:
    activity()
    group = session_group(event.session_id)
    if not listened(group):
        return
    session = event.session
    view = timeline.views_for(session, [event])[0]
    html = render_rows(session, [view])
    # Apart from the row: a viewer whose filters hide this event may still show the rows it changes.
    updates = render_updates(session, timeline.updates(session, [event], since=event.seq - 1))
    # `event.session` is first read here, after the commit: the counters are the append's.
    updates.append({"html": render_to_string("sessions_app/partials/session_health.html",
                                             {"session": session, "oob": True}), "meta": None})
    send(group, {"type": "event.appended", "html": html, "updates": updates, "stream_key": stream_key(event.event_id),
                 **view.meta()})


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


@relayed
def session_created(*, session: Session) -> None:
    activity()
    group = app_group(session.app_id)
    if listened(group):
        html = render_to_string("sessions_app/partials/session_row.html", {"s": session, "oob": True})
        send(group, {"type": "session.created", "html": html})


@relayed
def session_deleted(*, session_pk: int) -> None:
    activity()
    send(session_group(session_pk), {"type": "session.deleted", "pk": session_pk})


async def watched(session_pk: int) -> bool:
    """Whether anyone has the session's live page open.

    A viewer is a member of the session's group: `SessionEventsConsumer` joins
    it when the page's websocket connects and leaves it when the socket closes
    (the tab closed, the page left), so the group is the viewer count, kept by
    the consumer's own join and leave.
    """
    return await _has_members(get_channel_layer(), session_group(session_pk))


def _is_redis(layer: Any) -> bool:
    # channels_redis (redis-py, and OpenTelemetry's SDK with it) costs every process about 0.2 CPU s
    # to import, and only a Redis channel layer needs it: a layer of its class means it was imported.
    redis_layers = sys.modules.get("channels_redis.core")
    return redis_layers is not None and isinstance(layer, redis_layers.RedisChannelLayer)


async def _has_members(layer: Any, group: str) -> bool:
    """Whether `group` has a member on any worker.

    The in-process layer holds its groups in this process, where without
    Redis every socket and every run live. channels_redis holds each group in
    Redis (a sorted set of its members), so a worker sees viewers connected
    to any other.

    Limits: a worker that dies without closing its sockets leaves its members
    in Redis until channels_redis's `group_expiry` (a day by default), so a run
    is then stopped late, and rows are rendered for nobody meanwhile, never
    missed. An unknown layer, or a Redis that does not answer, counts as
    watched for the same reason.
    """
    if isinstance(layer, InMemoryChannelLayer):
        return _has_local_listeners(layer, group)
    if not _is_redis(layer):
        return True
    try:
        connection = layer.connection(layer.consistent_hash(group))
        # The group's key and scores are channels_redis's own: the members
        # added within group_expiry, the ones its group_send still counts.
        members = await connection.zcount(layer._group_key(group), int(time.time()) - layer.group_expiry, "+inf")
    except Exception:  # Redis down: never skip a viewer (or stop a run) for want of an answer
        logger.warning("Could not count the members of %s; assuming some.", group, exc_info=True)
        return True
    return members > 0
