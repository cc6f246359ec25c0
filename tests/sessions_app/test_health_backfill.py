"""Migration 0007 computes the health signals of sessions stored before it, from their events."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from google.adk.events.event import Event as AdkEvent
from google.genai import types

from sessions_app import _append_sql, services
from sessions_app.keys import SessionKey
from sessions_app.models import Event, Session

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0006_session_origin")]
PRICES = {"gemini-2.5-flash": {"input": 0.30, "output": 2.50, "cached": 0.03}}


def history() -> list[AdkEvent]:
    """A user turn, the same call twice in one invocation, a failed tool, a priced reply."""
    def call(city: str) -> AdkEvent:
        part = types.Part(function_call=types.FunctionCall(id=f"c-{city}", name="get_weather", args={"city": city}))
        return AdkEvent(author="agent", invocation_id="inv-1", content=types.Content(role="model", parts=[part]))

    failed = types.Part(function_response=types.FunctionResponse(
        id="c-Atlantis", name="get_weather", response={"status": "error", "error_message": "no station"}))
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1_000, candidates_token_count=40, thoughts_token_count=10, cached_content_token_count=600)
    return [
        AdkEvent(author="user", invocation_id="inv-1", content=types.Content(role="user", parts=[types.Part(text="hi")])),
        call("Atlantis"),
        AdkEvent(author="agent", invocation_id="inv-1", content=types.Content(role="user", parts=[failed])),
        call("Atlantis"),
        AdkEvent(author="agent", invocation_id="inv-1", model_version="gemini-2.5-flash", usage_metadata=usage,
                 content=types.Content(role="model", parts=[types.Part(text="Sorry.")])),
    ]


def store_before_0007(apps, events: list[AdkEvent]) -> int:
    """A session as the schema before 0007 held it (no signals), written with that schema's models."""
    OldApp, OldSession, OldEvent = (apps.get_model("sessions_app", n) for n in ("App", "Session", "Event"))
    app = OldApp.objects.create(name="old_app")
    session = OldSession.objects.create(app=app, user_id="ann", session_id="old", create_time=1.0, update_time=2.0,
                                        revision=len(events) + 1)
    for seq, event in enumerate(events, start=1):
        OldEvent.objects.create(session=session, seq=seq, event_id=event.id, invocation_id=event.invocation_id,
                                author=event.author, timestamp=event.timestamp,
                                data=event.model_dump(mode="json", exclude_none=True))
    # An event this ADK cannot read any more is skipped, not a failed migration.
    OldEvent.objects.create(session=session, seq=len(events) + 1, event_id="broken", timestamp=3.0,
                            data={"author": "agent", "actions": {"no_such_action": 1}, "content": 7})
    return session.pk


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


def test_0007_backfills_the_signals_the_appends_would_have_counted(settings):
    settings.ADKUI_MODEL_PRICES = PRICES
    executor = migrate(BEFORE)
    try:
        old_pk = store_before_0007(executor.loader.project_state(BEFORE).apps, history())
    finally:
        migrate(executor.loader.graph.leaf_nodes())

    backfilled = Session.objects.get(pk=old_pk)
    assert backfilled.turn_count == 1
    assert backfilled.error_count == 1
    assert backfilled.tool_loop_count == 1
    assert (backfilled.prompt_tokens, backfilled.output_tokens, backfilled.cached_tokens) == (1_000, 50, 600)
    assert backfilled.cost_usd == pytest.approx((400 * 0.30 + 600 * 0.03 + 50 * 2.50) / 1e6)
    assert backfilled.cache_hit_count == 1
    assert (backfilled.repeated_request_count, backfilled.ttft_ms) == (0, None)  # not in events: unknown
    assert list(Event.objects.filter(session_id=old_pk, has_error=True).values_list("seq", flat=True)) == [3]

    # The same events through the write path give the same counters.
    services.session_create(app_name="new_app", user_id="ann", session_id="new")
    for event in history():
        services.event_append(key=SessionKey("new_app", "ann", "new"), event=event)
    appended = Session.objects.get(session_id="new")
    for column in _append_sql.HEALTH_COLUMNS:
        assert getattr(backfilled, column) == pytest.approx(getattr(appended, column)), column
    # ...and remember the same calls: one more Atlantis call in inv-1 is a loop in both.
    assert backfilled.recent_calls == appended.recent_calls and len(backfilled.recent_calls) == 1
