"""REST API: ADK's api-server routes in ADK's camelCase JSON, plus what ADK lacks.

Sessions, events and runs take and return ADK's own pydantic models, dumped as
ADK's server dumps them (`by_alias`, no nulls, internal metadata and credential
secrets removed), so ADK clients work unchanged. Errors are JSON
`{"detail": ...}` (404 unknown app, session or invocation; 409 conflicts) or
DRF's `{field: [messages]}` for invalid input (400).

An app is known when the agents directory has it or sessions are stored for it
(an ADK Runner elsewhere can write through `DjangoSessionService`).

Eval sessions (ADK's own eval session ids, and the sessions of an app's eval-run
sandboxes, `app@eval-<run>-…`, see `sessions_app.sandbox`) are left out of the
session list unless asked for with `?include_eval=true`.

Modules: `base` (errors, lookups, input, OpenAPI), `sessions` (sessions),
`events` (events and state), `search` (events by content). The routes that
need the agent itself (list-apps, run, run_sse, stop) are runtime_app's.
"""
from __future__ import annotations

from .sessions import SessionListApi, SessionCreateApi, SessionCreateWithIdApi, SessionGetApi, SessionUpdateApi, SessionDeleteApi
from .events import EventListApi, EventCreateApi, StateGetApi
from .search import EventSearchApi

__all__ = [
    "SessionListApi",
    "SessionCreateApi",
    "SessionCreateWithIdApi",
    "SessionGetApi",
    "SessionUpdateApi",
    "SessionDeleteApi",
    "EventListApi",
    "EventCreateApi",
    "StateGetApi",
    "EventSearchApi",
]
