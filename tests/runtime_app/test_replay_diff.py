"""The replay diff: turns split from stored events, and what changed between two runs of them."""
from __future__ import annotations

from google.adk.events import Event as AdkEvent
from google.adk.events import EventActions
from google.genai import types

from runtime_app.replay_diff import compare, split_turns, state_diff, summarize


def user(text: str, delta: dict | None = None) -> AdkEvent:
    return AdkEvent(author="user", invocation_id="inv", content=types.Content(role="user", parts=[types.Part(text=text)]),
                    actions=EventActions(state_delta=delta or {}))


def call(name: str, args: dict) -> AdkEvent:
    part = types.Part(function_call=types.FunctionCall(name=name, args=args))
    return AdkEvent(author="agent", invocation_id="inv", content=types.Content(role="model", parts=[part]))


def result(name: str, response: dict) -> AdkEvent:
    part = types.Part(function_response=types.FunctionResponse(name=name, response=response))
    return AdkEvent(author="agent", invocation_id="inv", content=types.Content(role="user", parts=[part]))


def answer(text: str, thought: str = "") -> AdkEvent:
    parts = ([types.Part(text=thought, thought=True)] if thought else []) + [types.Part(text=text)]
    return AdkEvent(author="agent", invocation_id="inv", content=types.Content(role="model", parts=parts))


def failure(code: str, message: str) -> AdkEvent:
    return AdkEvent(author="agent", invocation_id="inv", error_code=code, error_message=message)


def numbered(*events: AdkEvent) -> list[tuple[int, AdkEvent]]:
    return list(enumerate(events, start=1))


def turn(events: list[AdkEvent], state: dict | None = None, shared: dict | None = None, number: int = 1):
    (stored,) = split_turns(numbered(*events))
    return summarize(number, stored, state or {}, shared or {})


def test_turns_start_at_user_messages_and_leave_out_what_came_before():
    state_only = AdkEvent(author="user", invocation_id="p", actions=EventActions(state_delta={"k": 1}))
    events = numbered(answer("before anything"), user("hi"), answer("hello"), state_only, user("bye"), answer("ciao"))
    turns = split_turns(events)
    assert [(t.user_seq, t.last_seq) for t in turns] == [(2, 4), (5, 6)]
    assert [seq for seq, _ in turns[0].events] == [3, 4]  # a user event without content is no turn of its own


def test_a_turn_without_answers_ends_at_its_own_event():
    (only,) = split_turns(numbered(user("hi")))
    assert only.last_seq == 1 and only.events == []


def test_summarize_keeps_calls_in_order_the_final_text_and_errors():
    summary = turn([user("plan", {"budget": 3}), call("plan_trip", {"city": "Oslo"}), result("plan_trip", {"ok": True}),
                    call("get_weather", {"city": "Oslo"}), result("get_weather", {}),
                    answer("Done.", thought="thinking hard"), failure("QUOTA", "out of tokens")],
                   state={"destination": "Oslo"})
    assert summary.user_text == "plan"
    assert summary.calls == [{"name": "plan_trip", "args": {"city": "Oslo"}}, {"name": "get_weather", "args": {"city": "Oslo"}}]
    assert summary.response == "Done."  # tool calls and results are no response, thoughts are left out
    assert summary.errors == ["QUOTA: out of tokens"]
    assert (summary.user_seq, summary.last_seq, summary.state) == (1, 7, {"destination": "Oslo"})


def test_state_diff_names_added_removed_and_changed_keys():
    diff = state_diff({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 20, "d": 4})
    assert diff.added == [("d", 4)] and diff.removed == [("c", 3)] and diff.changed == [("b", 2, 20)]
    assert diff.unchanged == 1 and diff.is_changed
    assert not state_diff({"a": [1]}, {"a": [1]}).is_changed


def test_identical_turns_are_unchanged():
    events = [user("plan"), call("plan_trip", {"city": "Oslo"}), result("plan_trip", {}), answer("Done.")]
    (d,) = compare([turn(events, {"x": 1})], [turn(events, {"x": 1})])
    assert d.paired and not d.changed
    assert not (d.tools_changed or d.response_changed or d.errors_changed or d.state_changed)
    assert [row.kind for row in d.calls] == ["same"]


def test_other_tool_args_are_a_changed_trajectory():
    original = turn([user("plan"), call("plan_trip", {"city": "Oslo"}), answer("Done.")])
    replay = turn([user("plan"), call("plan_trip", {"city": "Lima"}), call("get_weather", {"city": "Lima"}), answer("Done.")])
    (d,) = compare([original], [replay])
    assert d.tools_changed and d.changed and not d.response_changed
    assert [row.kind for row in d.calls] == ["changed", "extra"]
    assert [(a.key, a.kind) for a in d.calls[0].args] == [("city", "changed")]


def test_a_changed_response_is_diffed_word_by_word():
    (d,) = compare([turn([user("hi"), answer("The trip is planned.")])], [turn([user("hi"), answer("The trip is booked.")])])
    left, right = d.response_spans
    assert d.response_changed
    assert [(s.text, s.kind) for s in left if s.kind != "same"] == [("planned.", "missing")]
    assert [(s.text, s.kind) for s in right if s.kind != "same"] == [("booked.", "extra")]


def test_session_state_counts_but_shared_state_does_not():
    events = [user("hi"), answer("hello")]
    same_session = compare([turn(events, {"k": 1}, {"user:visits": 1})], [turn(events, {"k": 1}, {"user:visits": 2})])[0]
    assert same_session.shared.is_changed and not same_session.changed
    other_session = compare([turn(events, {"k": 1})], [turn(events, {"k": 2})])[0]
    assert other_session.state_changed and other_session.changed


def test_an_error_only_in_the_replay_is_a_change():
    (d,) = compare([turn([user("hi"), answer("hello")])], [turn([user("hi"), failure("AGENT_ERROR", "boom")])])
    assert d.errors_changed and d.response_changed and d.changed


def test_turns_pair_by_order_and_a_missing_side_is_no_change():
    first = turn([user("one"), answer("1")])
    second = turn([user("two"), answer("2")], number=2)
    diffs = compare([first, second], [first])
    assert [d.number for d in diffs] == [1, 2]
    assert diffs[1].original is second and diffs[1].replay is None
    assert not diffs[1].paired and not diffs[1].changed and diffs[1].user_text == "two"
    extra = compare([], [first])[0]
    assert extra.original is None and extra.user_text == "one"
