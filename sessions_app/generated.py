"""Generated sessions for trying the UI, and benchmarking it, at scale (`manage.py fill_scale`, bench/scale_bench.py).

Every session is written through the write path (`services.session_create`,
`services.event_append`), many to a transaction: the rows are those any
create and append write, only the commits are fewer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from . import services
from .keys import SessionKey

BASE_TIME = 1.7e9  # event times: sessions ten seconds apart from here, in generation order


@dataclass(frozen=True)
class GeneratedApp:
    """`sessions` sessions of app `app` over `users` users, `events` events each: every
    event with a state delta in every scope, and one session in twenty ending in an error."""

    app: str
    sessions: int
    users: int
    events: int

    def user(self, s: int) -> str:
        return f"user-{s % self.users:05d}"

    def session_id(self, s: int) -> str:
        return f"s-{s:07d}"

    def initial_state(self, s: int) -> dict[str, Any]:
        return {"topic": f"topic {s % 13}", "user:lang": ["en", "fr", "de"][s % 3], "app:build": 1}

    def event(self, s: int, i: int) -> Event:
        user_turn = i % 2 == 0
        error = s % 20 == 7 and i == self.events - 1
        text = f"{'question' if user_turn else 'answer'} {i} of session {s}: " + "lorem ipsum dolor " * 6
        return Event(
            id=f"e-{s}-{i}", invocation_id=f"inv-{s}-{i // 2}", author="user" if user_turn else "helper",
            timestamp=BASE_TIME + s * 10 + i * 0.01,
            content=types.Content(role="user" if user_turn else "model", parts=[types.Part(text=text)]),
            error_code="MALFORMED_FUNCTION_CALL" if error else None,
            actions=EventActions(state_delta={
                "step": i, "last": text[:20], f"note_{i % 4}": {"n": i, "tags": ["a", "b"]},
                "user:turns": s * 100 + i, "app:appends": s * 100 + i,
            }),
        )


def fill(generated: GeneratedApp, indexes: range, *, batch: int = 200) -> None:
    """Write sessions number `indexes` of `generated`, `batch` to a transaction."""
    for start in range(indexes.start, indexes.stop, batch):
        with transaction.atomic():
            for s in range(start, min(start + batch, indexes.stop)):
                key = SessionKey(generated.app, generated.user(s), generated.session_id(s))
                services.session_create(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id,
                                        state=generated.initial_state(s))
                for i in range(generated.events):
                    services.event_append(key=key, event=generated.event(s, i), push=False)
