"""Writes. Every event, from any path, is stored by `event_append`.

Each service runs in one transaction and broadcasts on commit, so a viewer
never sees an event that was rolled back. Broadcasts are registered `robust`:
one that fails (Redis down) is logged, never raised, because the write has
committed and its caller must get the database's answer; a viewer who missed
it catches up when its websocket reconnects.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import IntegrityError, connection, transaction
from django.db.models import ExpressionWrapper, F, FloatField
from django.db.models.functions import Coalesce
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions

from access import limits

from . import _append_sql, broadcast, health, relay, selectors
from .keys import SessionKey
from .models import SCOPE_APP, SCOPE_SESSION, SCOPE_USER, App, Event, Session, SessionSignature, StateChange
from .scopes import ScopedDelta, json_safe_state, merge_state, split_delta, split_key


@dataclass(frozen=True)
class SeenRevision:
    """What a writer last read of a session, to refuse a stale write.

    `revision` is exact when the writer's session came from us; otherwise
    (a session built by hand) ADK's fallback applies: stale when storage was
    updated later and its newest event is not the writer's newest event.
    """

    revision: int | None
    last_update_time: float
    last_event_id: str | None


STALE_MESSAGE = (
    "The session was changed in storage after this copy of it was read "
    "(stale writer). Please reload the session before appending more events."
)


def require_names(*, app_name: str, user_id: str) -> None:
    limits.check_id(app_name, "app_name")
    limits.check_id(user_id, "user_id")


def _check_event(event: AdkEvent) -> None:
    """What the event's indexed columns hold: a displayable time and ids that fit."""
    limits.check_timestamp(event.timestamp)
    limits.check_id(event.id, "id")
    optional = {
        "invocationId": event.invocation_id, "author": event.author,
        "errorCode": None if event.error_code is None else str(event.error_code),
        "actions.rewindBeforeInvocationId": event.actions.rewind_before_invocation_id,
    }
    for field, value in optional.items():
        if value is not None:
            limits.check_id(value, field, required=False)


def _check_state(safe: dict[str, Any], delta: ScopedDelta) -> None:
    """State set without an event: storable JSON (checked in the JSON form stored), keys that fit."""
    limits.dumps(safe, "state")
    _check_keys(delta, "state")


def _check_keys(delta: ScopedDelta, field: str) -> None:
    for values in (delta.app, delta.user, delta.session):
        for key in values:
            limits.check_id(key, f"{field} key")


def app_get_or_create(*, name: str) -> App:
    app, _ = App.objects.get_or_create(name=name)
    return app


class CreatedSession(NamedTuple):
    """A new session's row, with its app's and user's state as it made them."""

    session: Session
    app_state: dict[str, Any]
    user_state: dict[str, Any]


def session_create(
    *, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None,
    imported_from: str = "",
) -> Session:
    return session_create_with_shared(
        app_name=app_name, user_id=user_id, session_id=session_id, state=state, imported_from=imported_from
    ).session


def session_create_with_shared(
    *, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None,
    imported_from: str = "",
) -> CreatedSession:
    """`session_create`, with the shared states ADK's `create_session` merges into the one it returns
    (read in the same transaction, so no read after it)."""
    require_names(app_name=app_name, user_id=user_id)
    session_id = (session_id or "").strip() or str(uuid.uuid4())
    limits.check_id(session_id, "session_id")
    safe = json_safe_state(state or {})
    delta = split_delta(safe)
    _check_state(safe, delta)
    now = time.time()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            sql = _append_sql.Statements(cursor)  # plain statements: the ORM's cost more than they do
            slot = sql.session_slot(app_name, user_id, session_id)
            if slot is None:
                app_get_or_create(name=app_name)
                slot = sql.session_slot(app_name, user_id, session_id)
            if slot.exists:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            app = App(pk=slot.app_pk, name=app_name)
            locked = _append_sql.LockedSession(0, app.pk, user_id, 0, now, {})
            applied = _apply_delta(sql, locked, delta, now)
            session = Session(
                app=app, user_id=user_id, session_id=session_id, state=delta.session, create_time=now,
                update_time=now, state_mark=applied.mark, imported_from=imported_from,
            )
            sql.insert_session(session)
            locked.pk = session.pk  # the change rows name the session, which exists only now
            sql.insert_changes(locked, applied.changes, event_pk=None, seq=0, timestamp=now)
            relay.on_commit(broadcast.session_created, session=session)
    except IntegrityError as exc:  # a concurrent create won the race for this id
        raise AlreadyExistsError(f"Session with id {session_id} already exists.") from exc
    shared = {SCOPE_APP: slot.app_state, SCOPE_USER: slot.user_state, **applied.shared}
    return CreatedSession(session, shared[SCOPE_APP], shared[SCOPE_USER])


def session_state_correct(*, key: SessionKey, values: dict[str, Any]) -> list[str]:
    """Set state keys (any scope) to `values` without an event; return the keys changed.

    For an import keeping what its source holds where the source's own events
    do not explain it (a writer that bypassed append_event). Applied as every
    change is (`_apply_delta`), recorded under the session's newest event
    number with no event of its own, and the keys are kept in the session's
    `import_conflicts` so its page can say so.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        sql = _append_sql.Statements(cursor)
        locked = sql.lock_session(key.app_name, key.user_id, selectors.stored_session_id(key))
        if locked is None:
            raise SessionNotFoundError(f"Session {key.session_id!r} not found.")
        row = Session.objects.select_related("app").get(pk=locked.pk)
        ours = selectors.session_merged_state(row)
        differ = {k: v for k, v in json_safe_state(values).items() if k not in ours or ours[k] != v}
        if not differ:
            return []
        delta = split_delta(differ)
        _check_state(differ, delta)
        changes = _apply_delta(sql, locked, delta, locked.update_time).changes
        sql.insert_changes(locked, changes, event_pk=None, seq=locked.revision, timestamp=locked.update_time)
        sql.bump_session(locked.pk, locked.revision, locked.update_time, locked.state if delta.session else None)
        Session.objects.filter(pk=locked.pk).update(import_conflicts=sorted({*row.import_conflicts, *differ}))
    return sorted(differ)


def state_update_event(state_delta: dict[str, Any]) -> AdkEvent:
    """The event that changes state without running the agent, as ADK's server
    builds it for a PATCH of a session: authored "user", only a state delta,
    and a "p-" invocation id (`selectors.resumable_invocation` skips those)."""
    invocation_id = f"{selectors.STATE_UPDATE_INVOCATION_PREFIX}{uuid.uuid4()}"
    return AdkEvent(invocation_id=invocation_id, author="user", actions=EventActions(state_delta=state_delta))


def session_fork(*, session: Session, seq: int, app_name: str | None = None) -> Session:
    """A new session of the same user that continues this one's history up to event `seq`.

    Events 1..seq are copied as stored (ids, authors, invocation ids,
    timestamps, contents, session-state deltas), each through `event_append`,
    in one transaction with the fork's creation: the fork gets its own diffs
    and "state as of" every copied event, and the agent sees the same history.
    ADK needs no new ids: an event id is unique within its session (ADK's SQL
    services key events by session as well).

    Scopes. The fork is a new session of the same user, so its `app:` and
    `user:` state is, as for any session, the shared current one; only the
    session scope comes from the source as of #seq (its initial session
    state, then the copies' session-scope deltas). The copies' `app:` and
    `user:` keys are left out of their deltas: applied again, they would write
    old values into state that every other session of the app or user reads
    (the source keeps the full deltas). State the source got without any
    event (an import's corrections) is not carried over.

    `app_name`, a sandbox of the session's agent (`agent@label`, see `sandbox`):
    the fork lives there, its `app:` and `user:` state its own, starting from
    the source's as of #seq, so nothing it runs touches the source's scopes.
    """
    state = selectors.state_as_of(session, 0).session
    if app_name is not None:
        shared = selectors.state_as_of(session, seq)
        state = merge_state(shared.app, shared.user, state)
    with transaction.atomic():
        fork = session_create(app_name=app_name or session.app.name, user_id=session.user_id, state=state)
        # Sequence numbers run 1, 2, 3… with no gap: the first `seq` events are #1..#seq.
        for _, event in selectors.event_page(session, limit=seq):
            event_append(key=fork.key, event=_session_scope_only(event), push=False)
        Session.objects.filter(pk=fork.pk).update(forked_from=session, forked_at_seq=seq, update_time=time.time())
    fork.refresh_from_db()
    return fork


def _session_scope_only(event: AdkEvent) -> AdkEvent:
    delta = event.actions.state_delta
    event.actions.state_delta = {k: v for k, v in delta.items() if split_key(k)[0] == SCOPE_SESSION}
    return event


def session_delete(*, key: SessionKey) -> None:
    with transaction.atomic():
        session = Session.objects.for_key(**key.__dict__).first()
        if session is None:
            return
        # Session-scoped history dies with the session; app/user history stays.
        StateChange.objects.filter(session=session, scope=SCOPE_SESSION).delete()
        pk = session.pk
        session.delete()
        relay.on_commit(broadcast.session_deleted, session_pk=pk)


def event_append(*, key: SessionKey, event: AdkEvent, seen: SeenRevision | None = None, push: bool = True) -> Event:
    """Store one (non-partial) ADK event and apply its state delta, in one transaction.

    The event's `state_delta` must already be free of `temp:` keys; its values
    are replaced by their JSON form so the caller's copy equals what is stored.
    This is the hot path of every agent run, so it speaks SQL (`_append_sql`)
    rather than building ORM queries: about ten times fewer Python calls.
    """
    _check_event(event)
    safe_delta = json_safe_state(event.actions.state_delta or {})
    event.actions.state_delta = safe_delta
    data = event.model_dump(mode="json", exclude_none=True)
    data_json = limits.dumps(data, "event")
    delta = split_delta(safe_delta)
    _check_keys(delta, "stateDelta")
    signals = health.event_contribution(event)
    with transaction.atomic(), connection.cursor() as cursor:
        sql = _append_sql.Statements(cursor)
        locked = sql.lock_session(
            key.app_name, key.user_id, selectors.stored_session_id(key), calls=bool(signals.call_signatures),
            event_id=event.id, scopes=[scope for scope, values in delta.items() if values and scope != SCOPE_SESSION],
        )
        if locked is None:
            raise SessionNotFoundError(
                f"Session {key.session_id!r} of user {key.user_id!r} in app {key.app_name!r} not found."
            )
        # A retry of a stored event is refused before the stale check, which it
        # would fail too: "already stored" is the answer its sender needs.
        _refuse_stored(sql, locked, event.id)
        _check_fresh(sql, locked, seen)
        row = Event(session_id=locked.pk, seq=locked.revision + 1, data=data, has_error=bool(signals.errors),
                    **event_columns(event))
        applied = _apply_delta(sql, locked, delta, row.timestamp)
        row.state_mark, changes = applied.mark, applied.changes
        row.pk = sql.insert_event(row, data_json)
        sql.insert_changes(locked, changes, event_pk=row.pk, seq=row.seq, timestamp=row.timestamp)
        increments, recent_calls = _health_increments(signals, locked, row.invocation_id)
        sql.bump_session(
            locked.pk, row.seq, event.timestamp, locked.state if delta.session else None, increments, recent_calls
        )
        if push:  # a fork's copies go to a session nobody can be watching yet
            relay.on_commit(broadcast.event_appended, event=row)
    return row


def _health_increments(
    signals: health.Contribution, locked: _append_sql.LockedSession, invocation_id: str
) -> tuple[dict[str, float], list[Any] | None]:
    """What an append adds to the session's health counters, and its new recent calls (None: unchanged)."""
    increments = signals.increments()
    if not signals.call_signatures:
        return increments, None
    loops, recent_calls = health.record_calls(locked.recent_calls, invocation_id, signals.call_signatures)
    if loops:
        increments["tool_loop_count"] = loops
    return increments, recent_calls


def session_health_record_model_call(
    *, session_pk: int | None, request_fingerprint: int | None, ttft_ms: float | None
) -> None:
    """Count a model call the inspector's recorder saw: a repeat of an earlier
    identical request (`health.request_fingerprint`), and its time to first
    token into the session's running mean. Neither is in any event, so this
    is its own short transaction beside the appends; it takes the session row
    first, as an append does, and a session deleted meanwhile is skipped."""
    if session_pk is None or (request_fingerprint is None and ttft_ms is None):
        return
    with transaction.atomic():
        if not Session.objects.select_for_update().filter(pk=session_pk).exists():
            return
        updates: dict[str, Any] = {}
        if request_fingerprint is not None:
            _, new = SessionSignature.objects.get_or_create(session_id=session_pk, signature=request_fingerprint)
            if not new:
                updates["repeated_request_count"] = F("repeated_request_count") + 1
        if ttft_ms is not None:
            total = Coalesce(F("ttft_ms"), 0.0) * F("ttft_samples") + ttft_ms
            updates["ttft_ms"] = ExpressionWrapper(total / (F("ttft_samples") + 1), output_field=FloatField())
            updates["ttft_samples"] = F("ttft_samples") + 1
        if updates:
            Session.objects.filter(pk=session_pk).update(**updates)


def partial_event_show(*, key: SessionKey, event: AdkEvent) -> None:
    """Show a streaming (partial) event to the session's viewers; it is never stored."""
    session = Session.objects.for_key(**key.__dict__).first()
    if session is not None:
        broadcast.partial_event(session=session, event=event)


def _refuse_stored(sql: _append_sql.Statements, locked: _append_sql.LockedSession, event_id: str) -> None:
    # Read under the session lock, so a copy that a concurrent request (a
    # client's retry in flight) committed first is seen; the unique
    # constraint on (session, event_id) backs this up.
    seq = sql.event_seq(locked, event_id)
    if seq is not None:
        raise AlreadyExistsError(f"Event {event_id!r} is already stored as #{seq}.")


def _check_fresh(sql: _append_sql.Statements, locked: _append_sql.LockedSession, seen: SeenRevision | None) -> None:
    if seen is None:
        return
    if seen.revision is not None:
        if seen.revision != locked.revision:
            raise StaleSessionError(STALE_MESSAGE)
        return
    if locked.update_time > seen.last_update_time and sql.newest_event_id(locked.pk) != seen.last_event_id:
        raise StaleSessionError(STALE_MESSAGE)


def event_columns(event: AdkEvent) -> dict[str, Any]:
    return {
        "event_id": event.id,
        "invocation_id": event.invocation_id or "",
        "author": event.author or "",
        "timestamp": event.timestamp,
        "branch": event.branch,
        "has_function_call": bool(event.get_function_calls()),
        "has_function_response": bool(event.get_function_responses()),
        "is_final_response": event.is_final_response(),
        "error_code": str(event.error_code) if event.error_code is not None else None,
        "rewind_before": event.actions.rewind_before_invocation_id,
    }


class Applied(NamedTuple):
    mark: int  # what the caller stores as `state_mark` (see `selectors.state_as_of`)
    changes: list[_append_sql.Change]  # every key changed
    shared: dict[str, dict[str, Any]]  # the app's and user's state after it, for the scopes it wrote


def _apply_delta(
    sql: _append_sql.Statements, locked: _append_sql.LockedSession, delta: ScopedDelta, now: float
) -> Applied:
    """Apply each scope's delta to its row.

    The one way state changes, for an appended event and a new session's
    initial state alike. The session scope is applied to `locked.state`,
    which the caller stores with the session row.
    """
    shared = {scope: sql.lock_scope(scope, locked) for scope, values in delta.items()
              if values and scope != SCOPE_SESSION}  # app, then user: the lock order
    # The mark is read only now, holding the app and user rows this delta
    # writes: every earlier writer of them has committed (so its changes are
    # at or below the mark) and every later one waits for us (so its change ids
    # come after ours). Read before these locks, the mark fell below a writer
    # that committed while we waited, and state as of this event undid that
    # writer's change and, with it, our own value of the same key. A scope the
    # delta does not write is not locked: as of this event it shows a state
    # it really had near our commit (its changes up to the mark, which its own
    # row lock keeps in commit order).
    mark = sql.newest_change_id(locked)
    changes: list[_append_sql.Change] = []
    for scope, values in delta.items():
        if not values:
            continue
        state = locked.state if scope == SCOPE_SESSION else shared[scope]
        for k, new in values.items():
            changes.append(_append_sql.Change(scope, k, state.get(k), new, k in state))
            state[k] = new
        if scope != SCOPE_SESSION:
            sql.save_scope(scope, locked, state, now)
    return Applied(mark, changes, shared)
