"""What changed between a session and its replay, turn by turn: pure functions, no database.

A turn is one user message (a user-authored event with content) and every
event after it up to the next one. Turns of the original and of the replay
pair up by order. Each pair compares what the agent did: its tool trajectory
(function call names and args, in order), its final response text, the errors
it recorded, and the session state after the turn. `app:` and `user:` state
is shared with every other session of the app or user, so it differs between
the two runs for reasons the agent's code has nothing to do with (a counter
the original already bumped); it is shown beside the session state but never
counts as a change.

The alignment and word-level text diff are the eval app's (`eval_app.diffs`),
so a replay and an eval result read the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.adk.events import Event as AdkEvent
from google.genai import types

from eval_app.diffs import CallRow, Span, text_diff, trajectory_diff

USER = "user"


@dataclass(frozen=True)
class TurnEvents:
    """One user turn as stored: the user's event, then the events that answered it."""

    user_seq: int
    user_event: AdkEvent
    events: list[tuple[int, AdkEvent]]  # (seq, event) after the user's, in order

    @property
    def last_seq(self) -> int:
        return self.events[-1][0] if self.events else self.user_seq


@dataclass(frozen=True)
class Turn:
    """What one turn did, in comparable form."""

    number: int  # 1-based
    user_seq: int
    last_seq: int
    user_text: str
    calls: list[dict[str, Any]]  # {"name", "args"} in call order
    response: str
    errors: list[str]
    state: dict[str, Any]  # session-scoped keys after the turn
    shared: dict[str, Any] = field(default_factory=dict)  # `app:` / `user:` keys after the turn, prefixed


@dataclass(frozen=True)
class StateDiff:
    """Lists, not dicts: a template would take a state key named `items` for the method."""

    added: list[tuple[str, Any]]  # only the replay has these keys
    removed: list[tuple[str, Any]]  # only the original has these
    changed: list[tuple[str, Any, Any]]  # (key, original's value, replay's value)
    unchanged: int = 0

    @property
    def is_changed(self) -> bool:
        return bool(self.added or self.removed or self.changed)


@dataclass(frozen=True)
class TurnDiff:
    """One pair of turns; a side is None when that session has no such turn (yet)."""

    number: int
    original: Turn | None
    replay: Turn | None
    calls: list[CallRow]
    response_spans: tuple[list[Span], list[Span]]
    state: StateDiff
    shared: StateDiff

    @property
    def paired(self) -> bool:
        return self.original is not None and self.replay is not None

    @property
    def user_text(self) -> str:
        return (self.original or self.replay).user_text  # type: ignore[union-attr]

    @property
    def tools_changed(self) -> bool:
        return self.paired and _call_keys(self.original) != _call_keys(self.replay)

    @property
    def response_changed(self) -> bool:
        return self.paired and self.original.response != self.replay.response  # type: ignore[union-attr]

    @property
    def errors_changed(self) -> bool:
        return self.paired and self.original.errors != self.replay.errors  # type: ignore[union-attr]

    @property
    def state_changed(self) -> bool:
        return self.paired and self.state.is_changed

    @property
    def changed(self) -> bool:
        return self.tools_changed or self.response_changed or self.errors_changed or self.state_changed


# ---- from stored events to turns ------------------------------------------------------


def is_user_turn(event: AdkEvent) -> bool:
    """A user message: authored by the user, with content (a state-only user event is no turn)."""
    return event.author == USER and event.content is not None and bool(event.content.parts)


def split_turns(events: list[tuple[int, AdkEvent]]) -> list[TurnEvents]:
    """Group a session's events, oldest first, into user turns; events before the first are left out."""
    turns: list[TurnEvents] = []
    for seq, event in events:
        if is_user_turn(event):
            turns.append(TurnEvents(user_seq=seq, user_event=event, events=[]))
        elif turns:
            turns[-1].events.append((seq, event))
    return turns


def summarize(number: int, turn: TurnEvents, state: dict[str, Any], shared: dict[str, Any]) -> Turn:
    """The comparable parts of one turn, given the session state after it."""
    answers = [event for _, event in turn.events]
    return Turn(
        number=number,
        user_seq=turn.user_seq,
        last_seq=turn.last_seq,
        user_text=content_text(turn.user_event.content),
        calls=[{"name": call.name, "args": call.args or {}} for event in answers for call in event.get_function_calls()],
        response="\n\n".join(
            text for event in answers
            if event.author != USER and event.is_final_response() and (text := content_text(event.content))
        ),
        errors=[_error_text(event) for event in answers if event.error_code],
        state=state,
        shared=shared,
    )


def _error_text(event: AdkEvent) -> str:
    return f"{event.error_code}: {event.error_message}" if event.error_message else str(event.error_code)


def content_text(content: types.Content | None) -> str:
    """The text a person reads in a content: its text parts, thoughts left out."""
    if content is None or not content.parts:
        return ""
    return "".join(part.text for part in content.parts if part.text and not part.thought)


# ---- comparing ---------------------------------------------------------------------------


def state_diff(original: dict[str, Any], replay: dict[str, Any]) -> StateDiff:
    """Keys only the replay has (added), only the original has (removed), or both with other values."""
    return StateDiff(
        added=[(k, v) for k, v in replay.items() if k not in original],
        removed=[(k, v) for k, v in original.items() if k not in replay],
        changed=[(k, v, replay[k]) for k, v in original.items() if k in replay and replay[k] != v],
        unchanged=sum(1 for k, v in original.items() if k in replay and replay[k] == v),
    )


def compare_turn(number: int, original: Turn | None, replay: Turn | None) -> TurnDiff:
    return TurnDiff(
        number=number,
        original=original,
        replay=replay,
        calls=trajectory_diff(original.calls if original else [], replay.calls if replay else []),
        response_spans=text_diff(original.response if original else "", replay.response if replay else ""),
        state=state_diff(original.state if original else {}, replay.state if replay else {}),
        shared=state_diff(original.shared if original else {}, replay.shared if replay else {}),
    )


def compare(original: list[Turn], replay: list[Turn]) -> list[TurnDiff]:
    """Pair the turns by order; the longer side's extra turns pair with None."""
    count = max(len(original), len(replay))
    return [compare_turn(i + 1, _at(original, i), _at(replay, i)) for i in range(count)]


def _at(turns: list[Turn], index: int) -> Turn | None:
    return turns[index] if index < len(turns) else None


def _call_keys(turn: Turn | None) -> list[tuple[str, Any]]:
    return [(call["name"], call["args"]) for call in turn.calls] if turn else []
