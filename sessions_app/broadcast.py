"""The only module that talks to the channel layer.

Services call these functions from `transaction.on_commit`, so nothing is
sent for a write that rolled back.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

if TYPE_CHECKING:
    from .models import Event, Session


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


def send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is not None and _has_listeners(layer, group):
        async_to_sync(layer.group_send)(group, message)


def event_appended(*, event: Event) -> None:
    send(session_group(event.session_id), {"type": "event.appended", "seq": event.seq})


def session_created(*, session: Session) -> None:
    send(app_group(session.app_id), {"type": "session.created", "pk": session.pk})


def session_deleted(*, session_pk: int) -> None:
    send(session_group(session_pk), {"type": "session.deleted", "pk": session_pk})
