"""Storage for ADK sessions, named after ADK's own tables.

An ADK `Event` is stored whole as its JSON (`Event.data`) beside the few columns
we query by. State lives in one JSON object per scope row (`AppState`,
`UserState`, `Session.state`), exactly as ADK's SQL services keep it, and every
change to it is also written as a `StateChange` row at append time so diffs,
key histories and "state as of an event" are queries, not replays.
"""
from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.utils.functional import cached_property

from .keys import SessionKey

SCOPE_APP = "app"
SCOPE_USER = "user"
SCOPE_SESSION = "session"
SCOPE_PREFIXES = {SCOPE_APP: "app:", SCOPE_USER: "user:", SCOPE_SESSION: ""}


class App(models.Model):
    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class AppState(models.Model):
    """`app:` state, shared by every user of one app (keys stored un-prefixed)."""

    app = models.OneToOneField(App, on_delete=models.CASCADE, primary_key=True, related_name="app_state")
    state = models.JSONField(default=dict, blank=True)
    update_time = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"app state of {self.app_id}"


class UserState(models.Model):
    """`user:` state, shared by one user's sessions of one app (keys un-prefixed)."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="user_states")
    user_id = models.CharField(max_length=255)
    state = models.JSONField(default=dict, blank=True)
    update_time = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "user_id"], name="unique_user_state")]

    def __str__(self) -> str:
        return f"user state of {self.user_id}"


class SessionQuerySet(models.QuerySet["Session"]):
    def for_key(self, *, app_name: str, user_id: str, session_id: str) -> SessionQuerySet:
        """The session ADK means by this id. As ADK's own services do, a padded id
        (`"order-42\\n"`) finds the session stored under it exactly if there is
        one (a database ADK's SQL service wrote keeps padded ids), else the one
        under its stripped form, which is how `session_create` stores it."""
        found = self.filter(app__name=app_name, user_id=user_id)
        stripped = session_id.strip()
        if stripped == session_id:
            return found.filter(session_id=session_id)
        exact_first = models.Case(models.When(session_id=session_id, then=0), default=1)
        return found.filter(session_id__in=[session_id, stripped]).order_by(exact_first)

    def needing_attention(self) -> SessionQuerySet:
        """Sessions whose health signals show errors, tool loops or repeated model requests."""
        return self.filter(
            models.Q(error_count__gt=0) | models.Q(tool_loop_count__gt=0) | models.Q(repeated_request_count__gt=0)
        )


class Session(models.Model):
    """One ADK session. `state` holds only the session-scoped (un-prefixed) keys.

    `revision` is bumped by every stored event and is also the sequence number
    of the newest event, so it doubles as the stale-writer marker and the
    event count.
    """

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="sessions")
    user_id = models.CharField(max_length=255)
    session_id = models.CharField(max_length=255)
    state = models.JSONField(default=dict, blank=True)
    create_time = models.FloatField()
    update_time = models.FloatField()
    revision = models.PositiveBigIntegerField(default=0)
    # The newest StateChange id before this session's initial state was written
    # (see Event.state_mark): the "as of creation" point for time travel.
    state_mark = models.BigIntegerField(default=0)
    # Set by `manage.py import_adk`: where the session came from (its initial
    # state is then reconstructed, not written by a client), and the keys whose
    # stored value the source's events do not explain (a writer bypassed
    # append_event); the source's value was kept for them.
    imported_from = models.CharField(max_length=1000, blank=True, default="")
    import_conflicts = models.JSONField(default=list, blank=True)
    # A fork continues another session's history up to one of its events; a
    # replay re-ran another session's user turns against the current agent code.
    # Indexed only where set (Meta): see "session_forks".
    forked_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="forks",
                                    db_index=False)
    forked_at_seq = models.PositiveBigIntegerField(null=True, blank=True)
    replay_of = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replays",
                                  db_index=False)
    # An edit-and-continue fork (runtime_app.edit_continue): what was edited, in words (searchable),
    # and the inspector's model call it edited (its pk: the inspector app depends on this one, not back).
    edit_label = models.CharField(max_length=1000, blank=True, default="")
    edited_call_pk = models.BigIntegerField(null=True, blank=True)
    # Health signals, kept up to date by every append (sessions_app.health).
    turn_count = models.PositiveIntegerField(default=0, help_text="User turns (user-authored events with content).")
    error_count = models.PositiveIntegerField(default=0, help_text="Events with an error code or a tool error.")
    tool_loop_count = models.PositiveIntegerField(
        default=0, help_text="Tool calls repeating an earlier call of the same invocation with the same args."
    )
    # [[invocation id, [call signature, ...]], ...] of the latest invocations that
    # called tools, oldest first and bounded (sessions_app.health.record_calls): on
    # the row every append already locks and writes, so telling a loop costs no
    # extra statement.
    recent_calls = models.JSONField(default=list, blank=True)
    repeated_request_count = models.PositiveIntegerField(default=0, help_text="Model requests identical to an earlier one.")
    ttft_ms = models.FloatField(null=True, blank=True, help_text="Mean time to first token, ms.")
    ttft_samples = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(
        null=True, blank=True, help_text="USD at ADKUI_MODEL_PRICES; empty: no model response of a priced model."
    )
    unpriced_count = models.PositiveIntegerField(
        default=0, help_text="Model responses with token usage whose model has no price (not in cost_usd)."
    )
    cache_hit_count = models.PositiveIntegerField(default=0, help_text="Model responses served partly from a context cache.")
    compaction_count = models.PositiveIntegerField(default=0)

    objects = SessionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "user_id", "session_id"], name="unique_adk_session")
        ]
        indexes = [
            models.Index(fields=["app", "update_time"], name="session_app_update"),
            # One user's sessions in ADK's list order: a keyset page reads its rows, not the user's all.
            models.Index(fields=["app", "user_id", "update_time", "session_id"], name="session_user_update"),
            # An ADK id alone, as OTLP spans name a session (gen_ai.conversation.id): no scan per trace.
            models.Index(fields=["session_id"], name="session_adk_id"),
            # At 100k sessions (#27, bench/scale_bench.py): the home page's recent sessions of all apps,
            # read newest first without a sort;
            models.Index(fields=["update_time", "id"], name="session_recent"),
            # the "needs attention" filter, its count and the home page's troubled sessions: a few
            # per cent of the rows, so an index of those alone;
            models.Index(fields=["app", "update_time", "id"], name="session_attention",
                         condition=models.Q(error_count__gt=0) | models.Q(tool_loop_count__gt=0)
                         | models.Q(repeated_request_count__gt=0)),
            # the session browser sorted by errors ("sorted by health").
            models.Index(fields=["app", "error_count", "id"], name="session_errors"),
            # A session's forks (its page's header) and replays, and the SET NULL of a deletion: of
            # the few sessions that are forks or replays only. With every row in a full index,
            # all NULL, SQLite's statistics rate it as useless and it scanned all 100 000 sessions
            # (13.7 ms of a 26 ms session page).
            models.Index(fields=["forked_from"], name="session_forks", condition=models.Q(forked_from__isnull=False)),
            models.Index(fields=["replay_of"], name="session_replays", condition=models.Q(replay_of__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.session_id

    @property
    def key(self) -> SessionKey:
        """How ADK names this session (reads `app`: select it with the session)."""
        return SessionKey(self.app.name, self.user_id, self.session_id)

    @property
    def event_count(self) -> int:
        return self.revision


class EventQuerySet(models.QuerySet["Event"]):
    def for_session(self, session: Session) -> EventQuerySet:
        return self.filter(session=session).order_by("seq")


class Event(models.Model):
    """One stored ADK event: the full JSON plus indexed columns."""

    # No index of its own: the unique (session, seq) index leads with it.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.PositiveBigIntegerField()
    event_id = models.CharField(max_length=255)
    invocation_id = models.CharField(max_length=255, blank=True, default="")
    author = models.CharField(max_length=255, blank=True, default="")
    timestamp = models.FloatField()
    branch = models.TextField(null=True, blank=True)
    data = models.JSONField()
    has_function_call = models.BooleanField(default=False)
    has_function_response = models.BooleanField(default=False)
    is_final_response = models.BooleanField(default=False)
    error_code = models.CharField(max_length=255, null=True, blank=True)
    # Set on ADK's rewind events: the invocation the session was rewound to before.
    rewind_before = models.CharField(max_length=255, null=True, blank=True)
    # The newest StateChange id before this event's own changes were written:
    # folding state back over the later changes (other than this event's own)
    # gives the state as of this event in every scope.
    state_mark = models.BigIntegerField(default=0)
    has_error = models.BooleanField(default=False, help_text="An error code or a tool error (sessions_app.health).")

    objects = EventQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="unique_event_seq"),
            # As in ADK's SQL service: a retried append cannot store an event twice.
            # Its index also serves lookups by ADK id (there is no separate one).
            models.UniqueConstraint(fields=["session", "event_id"], name="unique_event_id"),
        ]
        indexes = [
            models.Index(fields=["session", "invocation_id"], name="event_invocation"),
            models.Index(fields=["session", "timestamp"], name="event_timestamp"),
            # Only ADK's rewind events are indexed (rewinds are read by "is not null").
            models.Index(
                fields=["session", "rewind_before"], condition=models.Q(rewind_before__isnull=False), name="event_rewind"
            ),
            # The timeline's "error" filter; only error rows are indexed, so appends barely pay for it.
            models.Index(fields=["session", "seq"], condition=models.Q(has_error=True), name="event_errors"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.author}"


class SessionSignature(models.Model):
    """A 64-bit hash of a model request sent in a session (`health.request_fingerprint`):
    sending it again is a repeated request. A unique index, not a scan, tells."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    signature = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "signature"], name="unique_session_signature")]

    def __str__(self) -> str:
        return f"{self.signature:x}"


def is_same_value_rewrite(old_value: Any, new_value: Any, existed_before: bool) -> bool:
    """The key was written again with the value it had: stored (it is history), but no change.
    Compared as JSON text, so 1 -> 1.0 or 1 -> true still count as changes."""
    return (existed_before and new_value is not None
            and json.dumps(old_value, sort_keys=True) == json.dumps(new_value, sort_keys=True))


def change_kind(old_value: Any, new_value: Any, existed_before: bool) -> str:
    """What a state change did, for its row's class and badge: cleared, rewrite, changed or added."""
    if new_value is None:
        return "cleared"
    if is_same_value_rewrite(old_value, new_value, existed_before):
        return "rewrite"
    return "changed" if existed_before else "added"


class StateChange(models.Model):
    """One key changed in one scope by one event (or by a session's initial state).

    Rows of `app` and `user` scope outlive the session that wrote them (their
    links are set to NULL), because they are the history of shared state.
    """

    SCOPES = [(SCOPE_APP, "app"), (SCOPE_USER, "user"), (SCOPE_SESSION, "session")]

    # Neither link has an index of its own: `change_key_history` and
    # `change_session_seq` lead with them (every append writes three or so rows).
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="state_changes", db_index=False)
    user_id = models.CharField(max_length=255)
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, related_name="state_changes", db_index=False
    )
    event = models.ForeignKey(Event, on_delete=models.SET_NULL, null=True, related_name="state_changes")
    seq = models.PositiveBigIntegerField(help_text="Sequence number of the event; 0 for initial state.")
    scope = models.CharField(max_length=8, choices=SCOPES)
    key = models.CharField(max_length=255, help_text="Key without its scope prefix.")
    old_value = models.JSONField(null=True, blank=True)
    new_value = models.JSONField(null=True, blank=True)
    existed_before = models.BooleanField()
    timestamp = models.FloatField()

    class Meta:
        indexes = [
            models.Index(fields=["session", "seq"], name="change_session_seq"),
            # A key's changes in order: an `app:` key's whoever wrote them, a `user:` key's of one
            # user. Its history newest first and, for the state as of an event, its first change
            # after that event are read off these, not out of every change of the app or user
            # since (at 10 million events an `app:` key's history took 22 s, a state as of 4 s).
            models.Index(fields=["app", "scope", "key", "user_id", "id"], name="change_key_history"),
            models.Index(fields=["app", "scope", "key", "id"], name="change_key_order"),
            models.Index(fields=["app", "scope", "user_id", "id"], name="change_scope_order"),
        ]

    def __str__(self) -> str:
        return f"{self.full_key} @ {self.seq}"

    @property
    def full_key(self) -> str:
        return SCOPE_PREFIXES[self.scope] + self.key

    @property
    def is_cleared(self) -> bool:
        return self.new_value is None

    @property
    def is_rewrite(self) -> bool:
        return is_same_value_rewrite(self.old_value, self.new_value, self.existed_before)

    @cached_property
    def kind(self) -> str:
        return change_kind(self.old_value, self.new_value, self.existed_before)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "key": self.full_key,
            "old": self.old_value,
            "new": self.new_value,
            "existedBefore": self.existed_before,
        }


class Notice(models.Model):
    """A broadcast owed to live pages that another process serves (`sessions_app.relay`).

    Written in the transaction of the change it announces, so it exists
    exactly when that change does; kept a minute, long enough for every
    serving process to have read it.
    """

    origin = models.CharField(max_length=32, help_text="The process that wrote it, which has broadcast it already.")
    name = models.CharField(max_length=200, help_text="The relayed broadcast function.")
    kwargs = models.JSONField()
    created = models.FloatField(db_index=True)
