"""sessions_app.health: what one ADK event adds to its session's health signals."""
from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.cache_metadata import CacheMetadata
from google.genai import types

from sessions_app import health
from sessions_app.health import Contribution, event_contribution

PRICES = {
    "gemini-2.5-flash": {"input": 0.30, "output": 2.50, "cached": 0.03},
    "gemini-2.5-flash-lite": {"input": 0.10, "output": 0.40},
    "gemini-2.5-pro": {"input": 1.25, "output": 10.0, "cached": 0.125,
                       "input_long": 2.50, "output_long": 15.0, "cached_long": 0.25},
}


def usage(prompt: int = 0, output: int = 0, thoughts: int | None = None, cached: int | None = None):
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=output, thoughts_token_count=thoughts,
        cached_content_token_count=cached,
    )


def reply(text: str = "hi", **fields) -> Event:
    return Event(author="agent", invocation_id="inv-1",
                 content=types.Content(role="model", parts=[types.Part(text=text)]), **fields)


def tool_response(response: dict, invocation_id: str = "inv-1") -> Event:
    part = types.Part(function_response=types.FunctionResponse(id="c1", name="get_weather", response=response))
    return Event(author="agent", invocation_id=invocation_id, content=types.Content(role="user", parts=[part]))


def tool_calls(*calls: tuple[str, dict], invocation_id: str = "inv-1") -> Event:
    parts = [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in calls]
    return Event(author="agent", invocation_id=invocation_id, content=types.Content(role="model", parts=parts))


def user(text: str = "hello") -> Event:
    return Event(author="user", content=types.Content(role="user", parts=[types.Part(text=text)]))


# ---- errors: the same test as the inspector's tool-error count and the timeline's badge ----

@pytest.mark.parametrize(("response", "is_error"), [
    ({"status": "error", "error_message": "No weather station"}, True),
    ({"error": "timeout"}, True),
    ({"error": None}, True),  # the key alone marks it, as the inspector's `result__has_key="error"`
    ({"status": "ok", "city": "Paris"}, False),
    ({"result": "error"}, False),
])
def test_a_tool_response_is_an_error_by_its_error_key_or_status(response, is_error):
    assert health.is_tool_error(response) is is_error
    assert event_contribution(tool_response(response), PRICES).errors == int(is_error)


def test_an_error_code_is_an_error_and_counts_once_with_a_failed_tool_response():
    failed = tool_response({"error": "aborted"})
    failed.error_code = "INVOCATION_ABORTED"
    assert event_contribution(Event(author="agent", error_code="RESOURCE_EXHAUSTED"), PRICES).errors == 1
    assert event_contribution(failed, PRICES).errors == 1


def test_plain_replies_calls_and_user_messages_are_no_errors():
    for event in (reply(), tool_calls(("get_weather", {"city": "Paris"})), user()):
        assert event_contribution(event, PRICES).errors == 0


# ---- turns, compactions, cache hits ----

def test_a_turn_is_a_user_message_with_content():
    assert event_contribution(user(), PRICES).turns == 1
    assert event_contribution(Event(author="user", actions=EventActions(state_delta={"k": 1})), PRICES).turns == 0
    assert event_contribution(reply(), PRICES).turns == 0


def test_a_compaction_event_counts_as_a_compaction():
    summary = types.Content(role="model", parts=[types.Part(text="summary")])
    event = Event(author="agent", actions=EventActions(
        compaction=EventCompaction(start_timestamp=1.0, end_timestamp=2.0, compacted_content=summary)))
    assert event_contribution(event, PRICES).compactions == 1
    assert event_contribution(reply(), PRICES).compactions == 0


def test_a_cache_hit_is_cached_tokens_or_an_active_cache():
    cached = reply(usage_metadata=usage(prompt=5000, output=10, cached=4096), model_version="gemini-2.5-flash")
    active = CacheMetadata(cache_name="projects/p/locations/l/cachedContents/1", expire_time=2e9,
                           fingerprint="f", invocations_used=2, contents_count=3, created_at=1e9)
    fingerprint_only = CacheMetadata(fingerprint="f", contents_count=3)
    assert event_contribution(cached, PRICES).cache_hits == 1
    assert event_contribution(reply(cache_metadata=active), PRICES).cache_hits == 1
    # ADK keeps a fingerprint before any cache exists: no hit (as its telemetry counts hits).
    assert event_contribution(reply(cache_metadata=fingerprint_only), PRICES).cache_hits == 0
    assert event_contribution(reply(usage_metadata=usage(prompt=10, output=1, cached=0)), PRICES).cache_hits == 0


# ---- tokens and cost ----

def test_tokens_count_thinking_as_output_and_cost_bills_cached_tokens_at_their_rate():
    event = reply(usage_metadata=usage(prompt=10_000, output=500, thoughts=1_500, cached=4_000),
                  model_version="gemini-2.5-flash")
    c = event_contribution(event, PRICES)
    assert (c.prompt_tokens, c.output_tokens, c.cached_tokens) == (10_000, 2_000, 4_000)
    expected = (6_000 * 0.30 + 4_000 * 0.03 + 2_000 * 2.50) / 1_000_000
    assert c.cost_usd == pytest.approx(expected)
    assert c.unpriced == 0


def test_a_dated_or_preview_build_costs_what_its_model_costs_and_lite_is_its_own_model():
    assert health.price_for("models/gemini-2.5-flash-001", PRICES) is PRICES["gemini-2.5-flash"]
    assert health.price_for("gemini-2.5-flash-preview-09-2025", PRICES) is PRICES["gemini-2.5-flash"]
    assert health.price_for("gemini-2.5-flash-lite-preview-06-17", PRICES) is PRICES["gemini-2.5-flash-lite"]
    assert health.price_for("Gemini-2.5-Flash", PRICES) is PRICES["gemini-2.5-flash"]
    # Another model that merely shares the prefix has its own price, which we do not know.
    assert health.price_for("gemini-2.5-flash-image", PRICES) is None
    assert health.price_for("scripted", PRICES) is None
    assert health.price_for(None, PRICES) is None


@pytest.mark.parametrize("entry", [{"input": "0.3", "output": 2.5}, {"output": 2.5}, {"input": 0.3, "output": None},
                                   {"input": 0.3, "output": 2.5, "cached": "cheap"}, {"input": -1, "output": 1},
                                   [0.3, 2.5], None, {"input": True, "output": 1}])
def test_a_mistyped_price_leaves_the_cost_unknown_and_the_append_working(entry):
    event = reply(usage_metadata=usage(prompt=100, output=10), model_version="gemini-2.5-flash")
    c = event_contribution(event, {"gemini-2.5-flash": entry})
    assert (c.cost_usd, c.unpriced, c.prompt_tokens) == (None, 1, 100)


def test_a_price_table_that_is_not_a_mapping_prices_nothing(settings):
    settings.ADKUI_MODEL_PRICES = ["gemini-2.5-flash"]
    event = reply(usage_metadata=usage(prompt=100, output=10), model_version="gemini-2.5-flash")
    assert event_contribution(event).unpriced == 1


def test_a_model_without_cached_rate_bills_cached_tokens_as_input():
    cost = health.response_cost(PRICES["gemini-2.5-flash-lite"], prompt=1_000_000, output=0, cached=500_000)
    assert cost == pytest.approx(0.10)


def test_long_prompts_use_the_long_rates_where_a_model_has_them():
    pro = PRICES["gemini-2.5-pro"]
    assert health.response_cost(pro, prompt=200_000, output=0, cached=0) == pytest.approx(0.25)
    assert health.response_cost(pro, prompt=300_000, output=1_000_000, cached=0) == pytest.approx(0.75 + 15.0)


def test_an_unknown_model_has_no_cost_and_is_counted_unpriced():
    c = event_contribution(reply(usage_metadata=usage(prompt=100, output=10), model_version="scripted"), PRICES)
    assert c.cost_usd is None
    assert c.unpriced == 1
    assert c.prompt_tokens == 100
    assert "cost_usd" not in c.increments()


def test_an_event_without_usage_is_neither_priced_nor_unpriced():
    c = event_contribution(reply(model_version="gemini-2.5-flash"), PRICES)
    assert (c.cost_usd, c.unpriced, c.prompt_tokens) == (None, 0, 0)


def test_the_default_price_table_prices_current_gemini_models(settings):
    for model in ("gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview",
                  "gemini-3-flash-preview"):
        price = health.price_for(model, settings.ADKUI_MODEL_PRICES)
        assert price is not None, model
        assert price["output"] > price["input"] > 0


# ---- tool loops ----

def test_a_call_signature_is_the_tool_and_args_in_any_key_order():
    same = health.call_signature("get_weather", {"city": "Paris", "unit": "C"})
    assert same == health.call_signature("get_weather", {"unit": "C", "city": "Paris"})
    assert same != health.call_signature("get_weather", {"city": "Oslo", "unit": "C"})
    assert same != health.call_signature("get_forecast", {"city": "Paris", "unit": "C"})
    assert -(2**63) <= same < 2**63


def test_args_with_a_lone_surrogate_still_have_a_signature():
    assert health.call_signature("t", {"q": "\ud800"}) != health.call_signature("t", {"q": "\ud801"})
    assert health.request_fingerprint({"contents": ["\udfff"]}) != health.request_fingerprint({"contents": []})


def test_recorded_calls_stay_bounded_per_invocation_and_in_number_of_invocations():
    recent: list = []
    for i in range(health.RECENT_INVOCATIONS + 2):
        loops, recent = health.record_calls(recent, f"inv-{i}", [1, 2])
        assert loops == 0
    assert [e[0] for e in recent] == [f"inv-{i}" for i in range(2, health.RECENT_INVOCATIONS + 2)]
    loops, recent = health.record_calls(recent, "inv-2", [2, 3, 3])  # an older invocation, resumed
    assert loops == 2 and recent[-1] == ["inv-2", [1, 2, 3]]
    _, recent = health.record_calls(recent, "long", list(range(health.CALLS_PER_INVOCATION + 10)))
    assert len(recent[-1][1]) == health.CALLS_PER_INVOCATION
    assert health.record_calls({"not": "a list"}, "i", [5]) == (0, [["i", [5]]])  # stored garbage: start over


def test_fold_counts_a_repeated_call_in_one_invocation_as_a_loop_but_not_across_turns():
    paris = ("get_weather", {"city": "Paris"})
    events = [
        user(), tool_calls(paris), tool_response({"error": "down"}), tool_calls(paris), tool_calls(paris, paris),
        user(), tool_calls(paris, invocation_id="inv-2"),
    ]
    signals = health.fold(enumerate(events, start=1), PRICES)
    assert signals.tool_loop_count == 3
    assert signals.columns()["turn_count"] == 2
    assert signals.columns()["error_count"] == 1
    assert signals.error_seqs == [3]
    assert signals.columns()["cost_usd"] is None
    assert [inv for inv, _ in signals.recent_calls] == ["inv-1", "inv-2"]


def test_increments_leave_out_zeros():
    assert Contribution().increments() == {}
    assert Contribution(turns=1, cost_usd=0.0).increments() == {"turn_count": 1, "cost_usd": 0.0}


def test_a_request_fingerprint_ignores_key_order():
    a = {"model": "m", "contents": [{"role": "user", "parts": [{"text": "hi"}]}], "config": {"temperature": 0}}
    b = {"config": {"temperature": 0}, "contents": [{"parts": [{"text": "hi"}], "role": "user"}], "model": "m"}
    assert health.request_fingerprint(a) == health.request_fingerprint(b)
    assert health.request_fingerprint(a) != health.request_fingerprint(a | {"model": "n"})
