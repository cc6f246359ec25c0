"""Reads: sessions, events and state, in ADK's shapes or ours."""
from __future__ import annotations

from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast
from google.adk.events.event import Event as AdkEvent

from .models import App, AppState, Event, Session, UserState
from .scopes import merge_state


def session_find(*, app_name: str, user_id: str, session_id: str) -> Session | None:
    return (
        Session.objects.select_related("app", "app__app_state")
        .for_key(app_name=app_name, user_id=user_id, session_id=session_id)
        .first()
    )


def app_state_of(app: App) -> dict[str, Any]:
    try:
        return app.app_state.state
    except AppState.DoesNotExist:
        return {}


def user_state_get(*, app_name: str, user_id: str) -> dict[str, Any]:
    state = UserState.objects.filter(app__name=app_name, user_id=user_id).values_list("state", flat=True).first()
    return state or {}


def session_merged_state(session: Session) -> dict[str, Any]:
    user_state = UserState.objects.filter(app=session.app, user_id=session.user_id).values_list("state", flat=True).first()
    return merge_state(app_state_of(session.app), user_state or {}, session.state)


def session_event_json(
    *, session: Session, num_recent_events: int | None = None, after_timestamp: float | None = None
) -> list[str]:
    """Stored event JSON text in append order, the newest `num_recent_events` at most.

    Text, not decoded dicts: ADK's `Event.model_validate_json` parses it in one
    step, which is the whole cost of reading a long session.
    """
    if num_recent_events == 0:
        return []
    qs = Event.objects.filter(session=session)
    if after_timestamp:
        qs = qs.filter(timestamp__gte=after_timestamp)
    qs = qs.order_by("-seq").values_list(Cast("data", TextField()), flat=True)
    if num_recent_events is not None:
        qs = qs[:num_recent_events]
    rows = list(qs)
    rows.reverse()
    return rows


def adk_events(rows: list[str]) -> list[AdkEvent]:
    return [AdkEvent.model_validate_json(row) for row in rows]


def session_list(*, app_name: str, user_id: str | None = None) -> list[tuple[Session, dict[str, Any]]]:
    """Sessions oldest update first, each with its merged state (no events)."""
    app = App.objects.select_related("app_state").filter(name=app_name).first()
    if app is None:
        return []
    sessions = Session.objects.filter(app=app).order_by("update_time", "user_id", "session_id")
    users = UserState.objects.filter(app=app)
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
        users = users.filter(user_id=user_id)
    user_states = dict(users.values_list("user_id", "state"))
    app_state = app_state_of(app)
    return [(s, merge_state(app_state, user_states.get(s.user_id, {}), s.state)) for s in sessions]
