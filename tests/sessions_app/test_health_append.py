"""Health signals as the one write path and the recorder store them, after real ADK runs."""
from __future__ import annotations

import statistics

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event as AdkEvent
from google.adk.runners import Runner
from google.genai import types

from inspector_app import selectors as inspector_selectors
from inspector_app.models import ModelCall
from inspector_app.plugin import app_with_recorder
from runtime_app.runners import make_runner
from runtime_app.scripted_model import Call, Reply, ScriptedModel
from sessions_app import _append_sql, selectors, services
from sessions_app.keys import SessionKey
from sessions_app.models import Event, Session, SessionSignature

pytestmark = pytest.mark.django_db(transaction=True)

USER = "ann"
SCRIPTED_PRICE = {"input": 1.0, "output": 4.0, "cached": 0.5}


async def say(runner: Runner, session_id: str, text: str, *, streaming: bool = False) -> list[AdkEvent]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE, max_llm_calls=10)
    return [e async for e in runner.run_async(user_id=USER, session_id=session_id, new_message=message, run_config=config)]


@sync_to_async
def stored(session_id: str) -> Session:
    return Session.objects.get(session_id=session_id)


@sync_to_async
def stored_usage(session: Session) -> list[dict]:
    """Each stored event's usage, read from its JSON (not through sessions_app.health)."""
    rows = Event.objects.filter(session=session).order_by("seq").values_list("data", flat=True)
    return [data["usage_metadata"] for data in rows if "usage_metadata" in data]


def runner_for(agent: LlmAgent, service, app_name: str) -> Runner:
    return Runner(app=app_with_recorder(agent, app_name=app_name), app_name=app_name, session_service=service)


async def test_a_trip_planner_run_stores_signals_that_agree_with_the_inspector_and_the_error_filter(service, settings):
    settings.ADKUI_MODEL_PRICES = {"scripted": SCRIPTED_PRICE}
    runner = make_runner("trip_planner", session_service=service)
    await service.create_session(app_name="trip_planner", user_id=USER, session_id="trip")
    await say(runner, "trip", "Plan a trip to Kyoto", streaming=True)
    await say(runner, "trip", "What is the weather in Atlantis?", streaming=True)  # no station: a tool error

    session = await stored("trip")
    usages = await stored_usage(session)
    totals = await sync_to_async(inspector_selectors.session_totals)(session)
    error_rows = await sync_to_async(list)(selectors.Filters(kind="error").apply(Event.objects.filter(session=session)))

    assert session.turn_count == 2
    assert session.error_count == 1 == totals.tool_errors + totals.model_errors
    assert [e.author for e in error_rows] == ["weather_expert"] and error_rows[0].has_function_response
    assert session.tool_loop_count == 0 and session.repeated_request_count == 0
    assert session.prompt_tokens == sum(u["prompt_token_count"] for u in usages) == totals.prompt_tokens
    assert session.output_tokens == sum(u["candidates_token_count"] for u in usages) == totals.output_tokens
    expected_cost = sum(u["prompt_token_count"] * 1.0 + u["candidates_token_count"] * 4.0 for u in usages) / 1e6
    assert session.cost_usd == pytest.approx(expected_cost)
    assert session.unpriced_count == 0
    assert (session.cached_tokens, session.cache_hit_count, session.compaction_count) == (0, 0, 0)
    calls = await sync_to_async(list)(ModelCall.objects.filter(session=session))
    ttfts = [c.first_chunk_ms if c.first_chunk_ms is not None else c.duration_ms for c in calls]
    assert session.ttft_samples == len(calls) == len(usages)
    assert session.ttft_ms == pytest.approx(statistics.mean(ttfts))


async def test_a_model_with_no_price_leaves_the_cost_unknown(service, settings):
    settings.ADKUI_MODEL_PRICES = {"gemini-2.5-flash": SCRIPTED_PRICE}
    runner = make_runner("trip_planner", session_service=service)
    await service.create_session(app_name="trip_planner", user_id=USER, session_id="free")
    await say(runner, "free", "hello")

    session = await stored("free")
    assert session.cost_usd is None
    assert session.unpriced_count == len(await stored_usage(session)) == 1
    assert session.prompt_tokens > 0


async def test_the_same_call_twice_in_one_invocation_is_a_tool_loop(service):
    def get_weather(city: str) -> dict:
        """Weather in `city`."""
        return {"status": "ok", "city": city}

    paris = Call("get_weather", {"city": "Paris"})
    model = ScriptedModel(rules=[], replies=[Reply(function_calls=[paris]), Reply(function_calls=[paris]),
                                             Reply(function_calls=[Call("get_weather", {"city": "Oslo"})]), "done"])
    runner = runner_for(LlmAgent(name="looper", model=model, tools=[get_weather]), service, "loop_app")
    await service.create_session(app_name="loop_app", user_id=USER, session_id="loop")
    await say(runner, "loop", "weather please")

    session = await stored("loop")
    assert session.tool_loop_count == 1
    assert session.error_count == 0


async def test_the_same_model_request_sent_again_is_a_repeated_request(service):
    # Without contents the request is the instruction and this turn only: the same
    # message twice sends the model the same request twice.
    agent = LlmAgent(name="forgetful", model=ScriptedModel(default="ok"), include_contents="none")
    runner = runner_for(agent, service, "repeat_app")
    await service.create_session(app_name="repeat_app", user_id=USER, session_id="rep")
    await say(runner, "rep", "same words")
    assert (await stored("rep")).repeated_request_count == 0
    await say(runner, "rep", "same words")
    await say(runner, "rep", "other words")

    session = await stored("rep")
    assert session.repeated_request_count == 1
    assert session.turn_count == 3 and session.ttft_samples == 3


def append(key: SessionKey, event: AdkEvent, **kwargs) -> Event:
    return services.event_append(key=key, event=event, **kwargs)


def call_event(city: str = "Paris") -> AdkEvent:
    part = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": city}))
    return AdkEvent(author="agent", invocation_id="inv-1", content=types.Content(role="model", parts=[part]))


def counters(session_pk: int) -> dict:
    fields = sorted(_append_sql.HEALTH_COLUMNS)
    return Session.objects.filter(pk=session_pk).values(*fields).get()


def recent_calls(session_pk: int) -> list:
    return Session.objects.values_list("recent_calls", flat=True).get(pk=session_pk)


def test_a_refused_append_changes_no_signal_and_records_no_call(service):
    session = services.session_create(app_name="guard_app", user_id=USER, session_id="g")
    key = SessionKey("guard_app", USER, "g")
    first = append(key, call_event())
    before, calls = counters(session.pk), recent_calls(session.pk)
    assert before["tool_loop_count"] == 0 and len(calls) == 1

    with pytest.raises(StaleSessionError):
        append(key, call_event("Oslo"), seen=services.SeenRevision(revision=0, last_update_time=0.0, last_event_id=None))
    retried = AdkEvent.model_validate(first.data)
    with pytest.raises(AlreadyExistsError):
        append(key, retried)

    assert counters(session.pk) == before
    assert recent_calls(session.pk) == calls
    append(key, call_event("Oslo"))  # stored this time: a new call, not a loop
    append(key, call_event())  # the first call again: a loop
    assert counters(session.pk)["tool_loop_count"] == 1


def test_events_without_calls_leave_the_recent_calls_alone(service):
    session = services.session_create(app_name="guard_app", user_id=USER, session_id="k")
    key = SessionKey("guard_app", USER, "k")
    append(key, call_event())
    calls = recent_calls(session.pk)
    append(key, AdkEvent(author="agent", invocation_id="inv-2", content=types.Content(role="model", parts=[types.Part(text="x")])))
    assert recent_calls(session.pk) == calls


def test_the_recorders_report_skips_a_deleted_session_and_keeps_a_running_mean():
    session = services.session_create(app_name="report_app", user_id=USER, session_id="r")
    services.session_health_record_model_call(session_pk=session.pk, request_fingerprint=7, ttft_ms=100.0)
    services.session_health_record_model_call(session_pk=session.pk, request_fingerprint=7, ttft_ms=300.0)
    services.session_health_record_model_call(session_pk=session.pk, request_fingerprint=8, ttft_ms=None)
    session.refresh_from_db()
    assert (session.repeated_request_count, session.ttft_samples) == (1, 2)
    assert session.ttft_ms == pytest.approx(200.0)

    services.session_delete(key=SessionKey("report_app", USER, "r"))
    services.session_health_record_model_call(session_pk=session.pk, request_fingerprint=9, ttft_ms=50.0)
    services.session_health_record_model_call(session_pk=None, request_fingerprint=9, ttft_ms=50.0)
    assert not SessionSignature.objects.filter(session_id=session.pk).exists()


def test_the_health_counters_the_append_sql_names_are_session_columns():
    columns = {f.column for f in Session._meta.concrete_fields}
    assert _append_sql.HEALTH_COLUMNS <= columns
    assert {"repeated_request_count", "ttft_ms", "ttft_samples"} <= columns - _append_sql.HEALTH_COLUMNS


def test_the_append_sql_refuses_a_column_that_is_not_a_health_counter(service):
    session = services.session_create(app_name="guard_app", user_id=USER, session_id="h")
    with connection.cursor() as cursor, pytest.raises(ValueError):
        _append_sql.Statements(cursor).bump_session(session.pk, 1, 1.0, None, {"revision = 0, state": 1})
