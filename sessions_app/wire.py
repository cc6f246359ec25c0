"""ADK's wire form of sessions and events, as ADK's api server sends them."""
from __future__ import annotations

from typing import Any

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session as AdkSession

from adk_compat import public_event, public_session, redact_credential_secrets


def adk_json(model: AdkSession | AdkEvent) -> dict[str, Any]:
    """A session or event exactly as ADK's api server sends it: camelCase, no
    nulls, without ADK-internal metadata and credential secrets."""
    model = public_session(model) if isinstance(model, AdkSession) else public_event(model)
    return redact_credential_secrets(model.model_dump(exclude_none=True, by_alias=True, mode="json"))
