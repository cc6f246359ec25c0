"""Reads: sessions, events and state, in ADK's shapes or ours."""
from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any, NamedTuple, TypeVar

from asgiref.sync import async_to_sync
from django.db import connection
from django.db.models import F, Func, Max, Min, OuterRef, Q, QuerySet, Subquery, TextField
from django.db.models.expressions import OrderBy
from django.db.models.functions import Cast
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session as AdkSession

from adk_compat import compute_state_delta_for_rewind

from . import _append_sql, _list_sql, _page_sql
from .keys import SessionKey
from .models import (
    SCOPE_APP, SCOPE_PREFIXES, SCOPE_SESSION, SCOPE_USER, App, AppState, Event, Session, StateChange, UserState, change_kind,
)
from .sandbox import SEPARATOR
from .scopes import merge_state, split_key

KINDS = ("text", "tool", "state", "error")
T = TypeVar("T")
SessionPosition = _list_sql.SessionPosition


@dataclass(frozen=True)
class Filters:
    author: str = ""
    invocation: str = ""
    kind: str = ""
    final_only: bool = False

    @classmethod
    def from_query(cls, query: Any) -> Filters:
        kind = query.get("kind", "")
        return cls(
            author=query.get("author", "").strip(),
            invocation=query.get("invocation", "").strip(),
            kind=kind if kind in KINDS else "",
            final_only=query.get("final_only") in ("1", "on", "true"),
        )

    @property
    def active(self) -> bool:
        return bool(self.author or self.invocation or self.kind or self.final_only)

    def apply(self, events: QuerySet[Event]) -> QuerySet[Event]:
        if self.author:
            events = events.filter(author=self.author)
        if self.invocation:
            events = events.filter(invocation_id=self.invocation)
        if self.final_only:
            events = events.filter(Q(author="user") | Q(is_final_response=True))
        if self.kind == "tool":
            events = events.filter(Q(has_function_call=True) | Q(has_function_response=True))
        elif self.kind == "error":  # an error code or a tool error (sessions_app.health)
            events = events.filter(has_error=True)
        elif self.kind == "state":
            events = events.filter(state_changes__isnull=False).distinct()
        elif self.kind == "text":
            events = events.filter(has_function_call=False, has_function_response=False, error_code__isnull=True)
        return events

    def matches(self, meta: dict[str, Any]) -> bool:
        """The same test on a pushed event's metadata (see `EventView.meta`)."""
        return (
            (not self.author or meta["author"] == self.author)
            and (not self.invocation or meta["invocation"] == self.invocation)
            and (not self.final_only or meta["author"] == "user" or meta["final"])
            and (not self.kind or self.kind in meta["kinds"])
        )

SCOPE_ORDER = (SCOPE_APP, SCOPE_USER, SCOPE_SESSION)


def session_find(*, app_name: str, user_id: str, session_id: str) -> Session | None:
    return (
        Session.objects.select_related("app", "app__app_state")
        .for_key(app_name=app_name, user_id=user_id, session_id=session_id)
        .first()
    )


def stored_session_id(key: SessionKey) -> str:
    """The id the session `key` names is stored under (see `SessionQuerySet.for_key`)."""
    if key.session_id == key.session_id.strip():
        return key.session_id
    stored = Session.objects.for_key(**key.__dict__).values_list("session_id", flat=True).first()
    return key.session_id.strip() if stored is None else stored


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


class ListedSession(NamedTuple):
    """One session as ADK lists it: no events, its state merged with the app's and user's.
    A tuple: a whole app's list makes thousands, and a frozen dataclass costs twice as much to make."""

    session_id: str
    user_id: str
    update_time: float
    revision: int
    state: dict[str, Any]


def adk_session_read(
    *, app_name: str, user_id: str, session_id: str, num_recent_events: int | None = None,
    after_timestamp: float | None = None,
) -> tuple[ListedSession, list[str]] | None:
    """ADK's `get_session`: the session with its merged state, and its events' JSON in append order.

    Two plain statements (`_list_sql`) for an id as stored; a padded id
    (`SessionQuerySet.for_key`) takes the ORM's way.
    """
    if session_id != session_id.strip():
        row = session_find(app_name=app_name, user_id=user_id, session_id=session_id)
        if row is None:
            return None
        listed = ListedSession(row.session_id, user_id, row.update_time, row.revision, session_merged_state(row))
        return listed, session_event_json(session=row, num_recent_events=num_recent_events,
                                          after_timestamp=after_timestamp)
    with connection.cursor() as cursor:
        sql = _append_sql.Statements(cursor)
        found = _list_sql.session_with_shared(sql, app_name=app_name, user_id=user_id, session_id=session_id)
        if found is None:
            return None
        pk, (sid, user, updated, revision, state), app_state, user_state = found
        rows = [] if num_recent_events == 0 else _list_sql.event_json(
            sql, session_pk=pk, limit=num_recent_events, after_timestamp=after_timestamp)
    rows.reverse()
    return ListedSession(sid, user, updated, revision, merge_state(app_state, user_state, state)), rows


def session_list(
    *, app_name: str, user_id: str | None = None, after: _list_sql.SessionPosition | None = None,
    limit: int | None = None,
) -> list[ListedSession]:
    """Sessions oldest update first, each with its merged state (no events); with
    `after` and `limit`, a keyset page of them (see `_list_sql.session_columns`).

    Column values, no model instances (`_list_sql`): a whole app's list is
    the read ADK users find slowest at scale. The app and user keys, prefixed
    once per user rather than once per session, are laid over each session's
    own keys in the order `merge_state` gives them.
    """
    with connection.cursor() as cursor:
        sql = _append_sql.Statements(cursor)
        if user_id is not None:
            app_state, user_state, rows = _list_sql.user_session_columns(
                sql, app_name=app_name, user_id=user_id, after=after, limit=limit)
            user_states = {user_id: user_state}
        else:
            shared = _list_sql.shared_states(sql, app_name=app_name, user_id=None)
            if shared is None:
                return []
            app_pk, app_state, user_states = shared
            rows = _list_sql.session_columns(sql, app_pk=app_pk, after=after, limit=limit)
    shared_of = {user: merge_state(app_state, state, {}) for user, state in user_states.items()}
    no_user_state = merge_state(app_state, {}, {})
    return [
        ListedSession(sid, user, updated, revision, {**state, **shared_of.get(user, no_user_state)})
        for sid, user, updated, revision, state in rows
    ]


@dataclass
class ScopedState:
    """State split by scope, keys without their prefix."""

    app: dict[str, Any]
    user: dict[str, Any]
    session: dict[str, Any]

    def merged(self) -> dict[str, Any]:
        return merge_state(self.app, self.user, self.session)

    def by_scope(self) -> list[tuple[str, dict[str, Any]]]:
        return [(SCOPE_APP, self.app), (SCOPE_USER, self.user), (SCOPE_SESSION, self.session)]


def current_state(session: Session) -> ScopedState:
    app, user = _plain(_list_sql.shared_of, app_pk=session.app_id, user_id=session.user_id)
    return ScopedState(app=app, user=user, session=dict(session.state))


def state_as_of(session: Session, seq: int) -> ScopedState:
    """The state of every scope right after event `seq` (0: right after creation).

    Starts from the stored state and undoes every later change: for each key
    changed later, its value before the earliest such change. App and user
    keys count changes by any session, ordered by change id; the session's
    own changes count by sequence number. The app's and user's later changes
    are every session's since, so there each key's first later change is
    looked up on its own (`_undo_by_key`); the session's are grouped.
    """
    if seq == 0:
        mark = session.state_mark
    else:
        mark = Event.objects.filter(session=session, seq=seq).values_list("state_mark", flat=True).first()
        if mark is None:
            raise Event.DoesNotExist(f"Session {session.session_id!r} has no event #{seq}.")
    state = current_state(session)
    later_shared = StateChange.objects.filter(app_id=session.app_id, id__gt=mark).exclude(session=session, seq=seq)
    _undo_by_key(state.app, later_shared.filter(scope=SCOPE_APP))
    _undo_by_key(state.user, later_shared.filter(scope=SCOPE_USER, user_id=session.user_id))
    _undo(state.session, StateChange.objects.filter(session=session, scope=SCOPE_SESSION, seq__gt=seq))
    return state


def _undo(state: dict[str, Any], later: QuerySet[StateChange]) -> None:
    """Each key changed in `later` set back to its value before the first of those changes."""
    _set_back(state, StateChange.objects.filter(id__in=later.values("key").annotate(first=Min("id")).values("first")))


def _set_back(state: dict[str, Any], firsts: QuerySet[StateChange]) -> None:
    """Each key of `firsts` (one change a key) set back to its value before that change."""
    for key, old, existed in firsts.values_list("key", "old_value", "existed_before"):
        if existed:
            state[key] = old
        else:
            state.pop(key, None)


_KEYS_A_STATEMENT = 100


def _undo_by_key(state: dict[str, Any], later: QuerySet[StateChange]) -> None:
    """`_undo`, each key's first later change read off an index on its own (`first_change`, a
    statement per 100 keys) instead of grouping every later change: an early event of a busy app
    has millions after it (4 s at 10 million events). No change removes a key, so every key
    changed later is a key of the state now."""
    keys = list(state)
    for start in range(0, len(keys), _KEYS_A_STATEMENT):
        firsts = [Q(id=Subquery(first_change(later, key))) for key in keys[start:start + _KEYS_A_STATEMENT]]
        _set_back(state, StateChange.objects.filter(reduce(operator.or_, firsts)))


def first_change(changes: QuerySet[StateChange], key: str) -> QuerySet[StateChange]:
    """The id of the first of `changes` to `key`: off `change_key_order` for an `app:` key, off
    `change_key_history` for a `user:` key of one user, both in change order (no sort)."""
    return changes.filter(key=key).order_by("id").values("id")[:1]


_SCOPE_RANK = {scope: rank for rank, scope in enumerate(SCOPE_ORDER)}


class Change(NamedTuple):
    """A stored state change as the timeline shows it: its columns, not a model instance."""

    id: int
    event_id: int | None
    scope: str
    key: str
    old_value: Any
    new_value: Any
    existed_before: bool

    @property
    def full_key(self) -> str:
        return SCOPE_PREFIXES[self.scope] + self.key

    @property
    def kind(self) -> str:
        return change_kind(self.old_value, self.new_value, self.existed_before)


def _plain(read: Callable[..., T], **arguments: Any) -> T:
    """One plain-SQL read of `_list_sql` or `_page_sql`, on this thread's connection."""
    with connection.cursor() as cursor:
        return read(_append_sql.Statements(cursor), **arguments)


def _changes(**where: Any) -> list[Change]:
    """App, user, then session scope, each in change order (sorted here: an event's few rows)."""
    rows = _plain(_page_sql.change_columns, **where)
    return sorted((Change(*row) for row in rows), key=lambda change: (_SCOPE_RANK[change.scope], change.id))


def changes_by_event(event_pks: list[int]) -> dict[int, list[Change]]:
    """Each event's state changes (app, user, then session scope), for a page of events."""
    grouped: dict[int, list[Change]] = defaultdict(list)
    for change in _changes(event_pks=event_pks):
        grouped[change.event_id].append(change)
    return grouped


def initial_changes(session: Session) -> list[Change]:
    return _changes(initial_of=session.pk)


def key_history(*, app: App, full_key: str, user_id: str | None = None, session: Session | None = None) -> QuerySet[StateChange]:
    """Every change to one key, newest first. `app:` keys across the app,
    `user:` keys across the user's sessions, other keys within one session."""
    scope, key = split_key(full_key)
    changes = StateChange.objects.filter(app=app, scope=scope, key=key).select_related("session", "event")
    if scope == SCOPE_USER:
        changes = changes.filter(user_id=user_id)
    elif scope == SCOPE_SESSION:
        changes = changes.filter(session=session)
    return changes.order_by("-id")


def apps(*, sandboxes: bool = False) -> QuerySet[App]:
    """Stored apps; sandboxes (`agent@label`, see `sandbox`) only when asked for."""
    return App.objects.all() if sandboxes else App.objects.exclude(name__contains=SEPARATOR)


def without_sandboxes(sessions: QuerySet[Session], *, sandboxes: bool = False) -> QuerySet[Session]:
    """`sessions` less those of sandbox apps (eval runs'), unless `sandboxes`."""
    # The apps as a subquery, not a join: the sessions' own indexes then answer, the partial one of
    # those needing attention too (the home page's count at 100 000 sessions: a scan, 46 ms -> 0.6).
    return sessions if sandboxes else sessions.filter(app__in=App.objects.exclude(name__contains=SEPARATOR))


def sandbox_apps_of(app_name: str) -> QuerySet[App]:
    """The sandboxes of agent `app_name`: `app_name@label` for every label."""
    return App.objects.filter(name__startswith=f"{app_name}{SEPARATOR}")


def sandbox_app_names(app_name: str, *, user_id: str) -> list[str]:
    """The sandboxes of agent `app_name` holding sessions of `user_id`, oldest first."""
    names = sandbox_apps_of(app_name).filter(sessions__user_id=user_id).order_by("pk").values_list("name", flat=True)
    return list(dict.fromkeys(names))


def session_counts(*, sandboxes: bool = False) -> dict[str, int]:
    """Each app's number of sessions, counted per app on its index. (Joined and grouped, SQLite
    built a temporary index of every session on each call: 130 ms at 100 000, now 7.5.)"""
    counted = Session.objects.filter(app=OuterRef("pk")).order_by().annotate(c=Func(F("pk"), function="COUNT"))
    return dict(apps(sandboxes=sandboxes).annotate(n=Subquery(counted.values("c"))).values_list("name", "n"))


def user_ids(app: App, limit: int = 200) -> list[str]:
    return list(Session.objects.filter(app=app).values_list("user_id", flat=True).distinct().order_by("user_id")[:limit])


def changes_of(session: Session, seq: int) -> QuerySet[StateChange]:
    """The changes one event made (seq 0: the initial state)."""
    return StateChange.objects.filter(session=session, seq=seq)


# ADK's server appends a state change made without a run (PATCH of a session) as
# a "user" event of an invocation of its own, "p-<uuid>"; so do we.
STATE_UPDATE_INVOCATION_PREFIX = "p-"


def resumable_invocation(session: Session) -> str | None:
    """The newest invocation of a run when it did not end with the agent's final reply.

    State updates are passed over: their "user" event is no turn of the
    agent's, so no run there is left to resume, and a run unfinished before
    one still is.
    """
    last = _plain(_page_sql.last_run_event, session_pk=session.pk, state_update_prefix=STATE_UPDATE_INVOCATION_PREFIX)
    if last is None or not last.invocation_id:
        return None
    if last.author == "user" or not last.is_final_response or last.error_code:
        return last.invocation_id
    return None


def session_for_page(pk: int) -> Session | None:
    """The session a page shows, its app's name with it; None: no such session."""
    return _plain(_page_sql.session_row, pk=pk)


def forks(session: Session) -> list[_page_sql.Fork]:
    """Sessions forked from this one (pk, id, the seq forked at), oldest first."""
    return _plain(_page_sql.forks, session_pk=session.pk)


def rewind_preview(session: Session, event: Event) -> dict[str, Any]:
    """What ADK's rewind to before `event`'s invocation would undo, computed by ADK itself."""
    first_seq = (
        Event.objects.filter(session=session, invocation_id=event.invocation_id).aggregate(m=Min("seq"))["m"] or event.seq
    )
    adk = AdkSession(id=session.session_id, app_name=session.app.name, user_id=session.user_id,
                     state=session_merged_state(session), events=adk_events(session_event_json(session=session)))
    # Sequence numbers run 1, 2, 3… with no gap, so event #n sits at index n - 1.
    delta = async_to_sync(compute_state_delta_for_rewind)(adk, first_seq - 1)
    undone = Event.objects.filter(session=session, seq__gte=first_seq).order_by("seq")
    return {
        "invocation_id": event.invocation_id,
        "first_seq": first_seq,
        "undone": list(undone.values("seq", "author")[:30]),
        "undone_count": undone.count(),
        "state_changes": [
            {"key": k, "old": adk.state.get(k), "new": v, "existed": k in adk.state} for k, v in sorted(delta.items())
        ],
    }



def rewind_clears_unevented(session: Session, preview: dict[str, Any]) -> list[str]:
    """Keys a rewind (`rewind_preview`) sets to None although the session had a value for them
    before the invocation: ADK rebuilds the state at the rewind point from the events' state
    deltas alone, so a key no earlier event set (one of the session's initial state) is cleared."""
    before = state_as_of(session, preview["first_seq"] - 1).session
    return [c["key"] for c in preview["state_changes"] if c["new"] is None and before.get(c["key"]) is not None]


def invocation_exists(*, session: Session, invocation_id: str) -> bool:
    return Event.objects.filter(session=session, invocation_id=invocation_id).exists()


def session_with_app(pk: int) -> Session | None:
    return Session.objects.select_related("app").filter(pk=pk).first()


def session_revision(pk: int) -> int:
    return Session.objects.filter(pk=pk).values_list("revision", flat=True).first() or 0


def app_exists(pk: int) -> bool:
    return App.objects.filter(pk=pk).exists()


def app_known(name: str) -> bool:
    """Whether sessions are stored for app `name` (it may also be an agent's)."""
    return App.objects.filter(name=name).exists()


def app_by_name(name: str) -> App | None:
    return App.objects.filter(name=name).first()


def apps_by_name(*, sandboxes: bool = False) -> dict[str, App]:
    return {app.name: app for app in apps(sandboxes=sandboxes)}


def event_at(session: Session, seq: int | None) -> Event | None:
    """Event #`seq` of the session, or None (also for no number at all)."""
    return None if seq is None else Event.objects.filter(session=session, seq=seq).first()


def event_page(session: Session, *, after_seq: int = 0, limit: int | None = None) -> list[tuple[int, AdkEvent]]:
    """Up to `limit` events (all when None) after `after_seq`, oldest first, each with its sequence number."""
    rows = (
        Event.objects.filter(session=session, seq__gt=after_seq)
        .order_by("seq")
        .values_list("seq", Cast("data", TextField()))[:limit]
    )
    return [(seq, AdkEvent.model_validate_json(data)) for seq, data in rows]


def session_browser(
    *, app: App | None, user_id: str = "", search: str = "", order: str = "-update_time",
    needing_attention: bool = False, sandboxes_of: str = "",
) -> QuerySet[Session]:
    """An app's sessions for the session browser: of one user, ids containing `search`,
    only those whose health signals need attention; with `sandboxes_of` (the app's
    name), the sessions of its sandboxes (its eval runs') too. A search also finds the
    app's edit-and-continue forks (sandboxed) by their label."""
    sessions = Session.objects.filter(app=app) if app else Session.objects.none()
    if sandboxes_of:
        sandboxed = Session.objects.filter(app__in=sandbox_apps_of(sandboxes_of))
        sessions = (sessions | sandboxed).select_related("app")
    elif search and app:  # edit-and-continue forks (in sandboxes) are found by what was edited
        edited = Session.objects.filter(app__in=sandbox_apps_of(app.name), edit_label__icontains=search)
        sessions = (sessions | edited).select_related("app")
    if user_id:
        sessions = sessions.filter(user_id=user_id)
    if search:
        sessions = sessions.filter(Q(session_id__icontains=search) | Q(edit_label__icontains=search))
    if needing_attention:
        sessions = sessions.needing_attention()
    return sessions.alias(total_tokens=F("prompt_tokens") + F("output_tokens")).order_by(_nulls_last(order), "-pk")


class BrowserPosition(NamedTuple):
    """Where a session stands in a session-browser sort: its value of the sorted column
    (None: it has none yet, and sorts last) and its pk, the tiebreaker that makes the position unique."""

    value: float | int | None
    pk: int


@dataclass(frozen=True)
class BrowserPage:
    """A keyset page of the session browser: its rows, and the positions the pages before and after
    it start from (None: there is none)."""

    rows: list[Session]
    previous: BrowserPosition | None
    next: BrowserPosition | None

    @property
    def is_first(self) -> bool:
        return self.previous is None


def session_browser_page(
    sessions: QuerySet[Session], *, order: str, size: int,
    after: BrowserPosition | None = None, before: BrowserPosition | None = None,
) -> BrowserPage:
    """A page of `session_browser(order=order)`: the `size` sessions after position `after`, or
    before `before`, or the first ones. Keyset, not offset: a deep page costs what the first does,
    and a row arriving meanwhile shifts no page onto rows already seen."""
    column = order.removeprefix("-")
    ordered = sessions.annotate(sort_value=F(column))
    if before is not None:
        # The same walk backwards (`reverse` flips the nulls too), turned round afterwards.
        rows = list(ordered.filter(_before(column, order, before)).reverse()[:size + 1])
        if len(rows) <= size:  # back at the start (rows may have gone meanwhile): the first page, full
            return session_browser_page(sessions, order=order, size=size)
        rows = rows[:size][::-1]
        return BrowserPage(rows, _position(rows[0]), _position(rows[-1]))
    if after is not None:
        ordered = ordered.filter(_after(column, order, after))
    rows = list(ordered[:size + 1])
    more, rows = len(rows) > size, rows[:size]
    previous = (_position(rows[0]) if rows else after) if after is not None else None
    return BrowserPage(rows, previous, _position(rows[-1]) if more else None)


def _position(session: Session) -> BrowserPosition:
    return BrowserPosition(session.sort_value, session.pk)  # type: ignore[attr-defined]  # annotated above


def _after(column: str, order: str, at: BrowserPosition) -> Q:
    """The rows after `at` in `_nulls_last(order)`, "-pk": further on in the column, or level
    with it at a lower pk, or (after any value) without a value."""
    if at.value is None:
        return Q(**{f"{column}__isnull": True, "pk__lt": at.pk})
    further, reached = ("lt", "lte") if order.startswith("-") else ("gt", "gte")
    # The redundant bound on the column alone lets an index on it (update time's) seek to the position.
    after = Q(**{f"{column}__{reached}": at.value}) & (
        Q(**{f"{column}__{further}": at.value}) | Q(**{column: at.value, "pk__lt": at.pk}))
    # A column that cannot be NULL goes without that OR, which would cost the seek.
    return after | Q(**{f"{column}__isnull": True}) if _nullable(column) else after


def _nullable(column: str) -> bool:
    return column in {field.name for field in Session._meta.fields if field.null}


def _before(column: str, order: str, at: BrowserPosition) -> Q:
    """The rows before `at` in the same order: the complement of `_after` less `at` itself."""
    if at.value is None:
        return Q(**{f"{column}__isnull": False}) | Q(**{f"{column}__isnull": True, "pk__gt": at.pk})
    earlier, reached = ("gt", "gte") if order.startswith("-") else ("lt", "lte")
    return Q(**{f"{column}__{reached}": at.value}) & (
        Q(**{f"{column}__{earlier}": at.value}) | Q(**{column: at.value, "pk__gt": at.pk}))


def _nulls_last(order: str) -> OrderBy:
    """`-field` or `field` with sessions that have no value (no cost, no TTFT yet) last either way.
    A column that cannot be NULL is ordered plainly: PostgreSQL reads "DESC NULLS LAST" from no
    ascending index, so at 100k sessions it sorted them all to show 25 (#27)."""
    column = order.removeprefix("-")
    nulls = {"nulls_last": True} if _nullable(column) else {}
    return F(column).desc(**nulls) if order.startswith("-") else F(column).asc(**nulls)


def event_rows_before(session: Session, *, before: int | None, filters: Filters, limit: int) -> list[Event]:
    """Up to `limit` events matching `filters` before seq `before` (all when None), newest first."""
    if not filters.active:  # every session page's first read: in plain SQL (`_page_sql`)
        return _plain(_page_sql.event_rows, session_pk=session.pk, before=before, limit=limit)
    events = filters.apply(Event.objects.filter(session=session))
    if before is not None:
        events = events.filter(seq__lt=before)
    return list(events.order_by("-seq")[:limit])


def event_rows_after(session: Session, seq: int, *, upto: int, filters: Filters, limit: int) -> list[Event]:
    """Events matching `filters` with `seq` < sequence number <= `upto`, oldest first."""
    events = Event.objects.filter(session=session, seq__gt=seq, seq__lte=upto)
    return list(filters.apply(events).order_by("seq")[:limit])


def previous_invocation_id(session: Session, seq: int) -> str | None:
    """The invocation of the event just before #`seq`."""
    earlier = Event.objects.filter(session=session, seq__lt=seq).order_by("-seq")
    return earlier.values_list("invocation_id", flat=True).first()


def function_call_events(session: Session, invocation_ids: set[str]) -> list[AdkEvent]:
    """The events of these invocations that call functions."""
    rows = Event.objects.filter(session=session, invocation_id__in=invocation_ids, has_function_call=True)
    return [AdkEvent.model_validate(data) for data in rows.values_list("data", flat=True)]


def rewound_ranges(session: Session) -> list[tuple[int, int]]:
    """(first undone seq, rewind's seq) of every rewind: the events each undid."""
    rewinds = _plain(_page_sql.rewinds, session_pk=session.pk)
    if not rewinds:
        return []
    firsts = dict(
        Event.objects.filter(session=session, invocation_id__in={target for _, target in rewinds})
        .values("invocation_id").annotate(first=Min("seq")).values_list("invocation_id", "first")
    )
    return [(firsts[target], seq) for seq, target in rewinds if target in firsts]


def seq_range_between(session: Session, start: float, end: float, *, before_seq: int) -> tuple[int, int] | None:
    """First and last seq of the events stamped within [start, end] before #`before_seq` (a compaction's range)."""
    covered = Event.objects.filter(
        session=session, timestamp__gte=start, timestamp__lte=end, seq__lt=before_seq
    ).aggregate(first=Min("seq"), last=Max("seq"))
    return None if covered["first"] is None else (covered["first"], covered["last"])


def event_ids(session: Session) -> set[str]:
    """The ADK event ids stored in the session."""
    return set(Event.objects.filter(session=session).values_list("event_id", flat=True))


def function_response_events(session: Session, invocation_ids: set[str]) -> list[AdkEvent]:
    """The events of these invocations that answer function calls."""
    rows = Event.objects.filter(session=session, invocation_id__in=invocation_ids, has_function_response=True)
    return [AdkEvent.model_validate(data) for data in rows.values_list("data", flat=True)]


def function_call_rows(session: Session, invocation_ids: set[str], *, upto: int) -> list[Event]:
    """The events of these invocations up to #`upto` that call functions, oldest first."""
    rows = Event.objects.filter(session=session, invocation_id__in=invocation_ids, has_function_call=True, seq__lte=upto)
    return list(rows.order_by("seq"))


def rows_marking_earlier(session: Session, seq: int, *, upto: int, limit: int) -> list[Event]:
    """Up to `limit` events after #`seq` (up to #`upto`) that change how earlier rows
    look: function responses (their calls get paired) and rewinds (the rows they undid)."""
    events = Event.objects.filter(session=session, seq__gt=seq, seq__lte=upto)
    events = events.filter(Q(has_function_response=True) | Q(rewind_before__isnull=False))
    return list(events.order_by("seq")[:limit])


def session_pks(*, app_name: str, user_id: str, session_id: str | None = None) -> list[int]:
    """The stored sessions of a user in an app (only the one named, when `session_id` is given)."""
    sessions = Session.objects.filter(app__name=app_name, user_id=user_id)
    if session_id is not None:
        sessions = sessions.filter(session_id=session_id)
    return list(sessions.values_list("pk", flat=True))
