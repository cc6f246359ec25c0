"""Events and state, which ADK's server lacks: pages of events, ingest, state as of an event."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from google.adk.events.event import Event as AdkEvent
from pydantic import BaseModel, Field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from .. import selectors, services
from ..keys import SessionKey
from ..models import Event
from ..wire import adk_json
from .base import (
    AdkApi,
    EVENTS_PAGE_MAX,
    _check_size,
    _require_session,
    _validated,
    validate_adk,
)
from .schema import errors


# ---- events and state (not in ADK's server) ------------------------------------


def _event_json(seq: int | None, event: AdkEvent) -> dict[str, Any]:
    return {**adk_json(event), "seq": seq}


# Schema only (their docstrings are the schema's descriptions): typed, so a generated client reads events, not dicts.
class StoredEvent(AdkEvent):
    """An ADK event as stored here, with its place in the session (ADK's model ignores the extra `seq`)."""

    seq: int = Field(description="1, 2, ... in append order, never reused within the session.")


class EventPage(BaseModel):
    """A page of a session's events in append order."""

    events: list[StoredEvent]
    nextAfterSeq: int | None = Field(description="`after_seq` of the next page; null on the last.")
    lastSeq: int = Field(description="Sequence number of the newest stored event (0: none).")


class EventListApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        after_seq = serializers.IntegerField(min_value=0, default=0)
        limit = serializers.IntegerField(min_value=1, max_value=EVENTS_PAGE_MAX, default=100)

    @extend_schema(operation_id="event_list", tags=["events"], parameters=[InputSerializer], responses={200: EventPage})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """A page of the session's events in append order.

        Every stored event has a sequence number `seq` (1, 2, ... in append
        order, never reused within the session). Ask for `after_seq=0` first,
        then pass each page's `nextAfterSeq` until it is null. To follow a
        live session, poll with `after_seq=lastSeq`. Each event is ADK's JSON
        plus `"seq"` (ADK's model ignores the extra key).
        """
        query = _validated(self.InputSerializer, request.query_params)
        row = _require_session(SessionKey(app_name, user_id, session_id))
        page = selectors.event_page(row, after_seq=query["after_seq"], limit=query["limit"])
        last_returned = page[-1][0] if page else query["after_seq"]
        output = {
            "events": [_event_json(seq, event) for seq, event in page],
            "nextAfterSeq": last_returned if last_returned < row.revision else None,
            "lastSeq": row.revision,
        }
        return Response(output)


class EventCreateApi(AdkApi):
    @extend_schema(
        operation_id="event_create", tags=["events"], request=AdkEvent,
        responses={
            201: OpenApiResponse(StoredEvent, description="Stored: the event as stored, with its `seq`."),
            200: OpenApiResponse(AdkEvent, description="A partial event: accepted, not stored (`seq` null), as in ADK."),
            **errors(409, 413),
        },
    )
    def post(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """Append one ADK Event (JSON, camelCase or snake_case) written by any process.

        It is validated with ADK's own `Event` model and stored through the
        same path as a Runner's events: its state delta applies to the app,
        user and session scopes, `temp:` keys are dropped. An event whose id
        is already stored in the session is refused (409), so a retry is safe.
        A body over ADKUI_MAX_EVENT_BYTES is refused (413) before it is parsed.
        """
        _check_size(request)
        event = validate_adk(AdkEvent, request.data)
        key = SessionKey(app_name, user_id, session_id)
        _require_session(key)
        if event.partial:
            return Response(_event_json(None, event), status=status.HTTP_200_OK)
        # event_append drops `temp:` keys, as ADK's services do. A foreign
        # writer has no session copy to be stale against: no revision check.
        # An id already stored is refused there, under the session's lock
        # (AlreadyExistsError, answered 409 by AdkApi): checked here, before
        # the lock, a retry racing its first request was stored twice.
        appended = services.event_append(key=key, event=event)
        return Response(_event_json(appended.seq, event), status=status.HTTP_201_CREATED)


class StateGetApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        seq = serializers.IntegerField(min_value=0, required=False, help_text="0: right after creation; omit: now.")

    @extend_schema_serializer(component_name="StateAsOf")
    class OutputSerializer(serializers.Serializer):
        seq = serializers.IntegerField()
        state = serializers.DictField(help_text="Merged, as ADK shows it: session keys, `app:` and `user:` keys.")
        app = serializers.DictField(help_text="`app:` scope, keys without the prefix.")
        user = serializers.DictField(help_text="`user:` scope, keys without the prefix.")
        session = serializers.DictField(help_text="Session scope.")

    @extend_schema(operation_id="state_get", tags=["events"], parameters=[InputSerializer], responses={200: OutputSerializer})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """State of every scope right after event `seq` (time travel), or now."""
        seq = _validated(self.InputSerializer, request.query_params).get("seq")
        row = _require_session(SessionKey(app_name, user_id, session_id))
        if seq is None:
            seq, state = row.revision, selectors.current_state(row)
        else:
            try:
                state = selectors.state_as_of(row, seq)
            except Event.DoesNotExist as exc:
                raise NotFound(str(exc)) from exc
        output = {"seq": seq, "state": state.merged(), "app": state.app, "user": state.user, "session": state.session}
        return Response(self.OutputSerializer(output).data)
