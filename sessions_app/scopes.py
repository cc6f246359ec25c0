"""State keys and their scopes: splitting a delta, merging the stored rows."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.adk.sessions.state import State
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .models import SCOPE_APP, SCOPE_PREFIXES, SCOPE_SESSION, SCOPE_USER


class UnstorableValueError(ValueError):
    """A value that cannot be stored as it is (and so is refused whole)."""


class StateValueError(UnstorableValueError):
    """A state value has no faithful JSON form, so it cannot be stored."""


@dataclass
class ScopedDelta:
    """A state delta split by scope, keys without their prefix, `temp:` gone."""

    app: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.app or self.user or self.session)

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        return [(SCOPE_APP, self.app), (SCOPE_USER, self.user), (SCOPE_SESSION, self.session)]


def json_safe(key: str, value: Any) -> Any:
    """The JSON form of a state value, as ADK serialises it; error if there is none.

    ADK's SQL services quietly store `repr()` of a value they cannot serialise
    (a function, a connection). We refuse instead: such a value would come back
    as a different thing, and the caller learns which key is at fault.
    """
    try:
        safe = to_jsonable_python(value)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise StateValueError(
            f"State key {key!r} has a value of type {type(value).__name__} with no JSON form; "
            "store plain data (str, number, bool, None, list, dict, datetime, pydantic model)."
        ) from exc
    return safe


def json_safe_state(state: dict[str, Any]) -> dict[str, Any]:
    """Every non-temp value of `state` in its JSON form (temp keys are dropped)."""
    return {
        key: json_safe(key, value)
        for key, value in state.items()
        if not key.startswith(State.TEMP_PREFIX)
    }


def split_delta(state: dict[str, Any]) -> ScopedDelta:
    """Split a JSON-safe state dict by key prefix, as ADK's `extract_state_delta` does."""
    delta = ScopedDelta()
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            delta.app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            delta.user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            delta.session[key] = value
    return delta


def merge_state(app_state: dict[str, Any], user_state: dict[str, Any], session_state: dict[str, Any]) -> dict[str, Any]:
    """The merged view ADK returns: session keys, then `app:` keys, then `user:` keys."""
    merged = dict(session_state)
    merged.update({SCOPE_PREFIXES[SCOPE_APP] + k: v for k, v in app_state.items()})
    merged.update({SCOPE_PREFIXES[SCOPE_USER] + k: v for k, v in user_state.items()})
    return merged


def split_key(full_key: str) -> tuple[str, str]:
    """(scope, key without prefix) of a merged-view key such as `user:name`."""
    if full_key.startswith(State.APP_PREFIX):
        return SCOPE_APP, full_key.removeprefix(State.APP_PREFIX)
    if full_key.startswith(State.USER_PREFIX):
        return SCOPE_USER, full_key.removeprefix(State.USER_PREFIX)
    return SCOPE_SESSION, full_key
