"""Pure functions: placeholder spans, the size cap, binary parts, request diffs."""
from __future__ import annotations

from types import SimpleNamespace

from google.adk.utils.instructions_utils import inject_session_state
from google.genai import types

from inspector_app import capping, inspection, payloads, placeholders
from inspector_app.models import ModelCall


def located(template: str, state: dict, rendered: str) -> list[tuple[str, str]]:
    templates = [{"source": "instruction", "template": template, "pieces": placeholders.pieces(template, state)}]
    request = {"system_instruction": rendered, "contents": []}
    return [(s["key"], rendered[s["start"] : s["end"]]) for s in placeholders.locate(templates, request)]


async def test_pieces_follow_adks_substitution_rules():
    state = {"user:name": "Ada", "n": 3, "gone": None}
    template = "Hi {user:name}, {n} {gone} {x?} {not valid} {{user:name}} ${kept}"
    found = placeholders.pieces(template, state)
    keys = [(p["key"], p["value"]) for p in found if "key" in p]
    assert keys == [("user:name", "Ada"), ("n", "3"), ("gone", ""), ("x", ""), ("user:name", "Ada")]
    context = SimpleNamespace(_invocation_context=SimpleNamespace(session=SimpleNamespace(state=state)), agent_name="a")
    assert "".join(p.get("text", p.get("value")) for p in found) == await inject_session_state(template, context)


def test_locate_finds_values_inside_a_longer_system_instruction():
    rendered = "Prefix from a plugin.\n\nDear Ada, your topic is cats.\n\nYou are an agent."
    assert located("Dear {user:name}, your topic is {topic?}.", {"user:name": "Ada", "topic": "cats"}, rendered) == [
        ("user:name", "Ada"), ("topic", "cats")]


def test_locate_reads_artifact_values_from_the_rendered_text():
    rendered = "Notes: line one\nline two. End."
    assert located("Notes: {artifact.notes}. End.", {}, rendered) == [("artifact.notes", "line one\nline two")]


def test_locate_gives_up_when_the_template_is_not_in_the_request():
    templates = [{"source": "instruction", "template": "Hi {a}", "pieces": placeholders.pieces("Hi {a}", {"a": "x"})}]
    assert placeholders.locate(templates, {"system_instruction": "Hi y", "contents": []}) == []
    assert templates[0]["matched"] is False


def test_a_callable_instruction_is_named_not_templated():
    class Agent:
        instruction = staticmethod(lambda ctx: "dynamic")

    [template] = placeholders.agent_templates(Agent(), {})
    assert template["provider"] and template["pieces"] == []


def test_cap_cuts_long_strings_first_and_marks_them():
    value = {"short": "keep me", "long": "x" * 10_000, "items": list(range(5))}
    capped = capping.cap(value, 2_000)
    assert capped.truncated and capped.original_bytes > 10_000
    assert capping.json_size(capped.value) <= 2_000
    assert capped.value["short"] == "keep me" and capped.value["items"] == [0, 1, 2, 3, 4]
    body, cut = capping.split_mark(capped.value["long"])
    assert set(body) == {"x"} and cut == 10_000 - len(body)


def test_cap_cuts_long_lists_when_strings_are_not_enough():
    capped = capping.cap({"contents": [{"text": f"message {i}"} for i in range(2_000)]}, 3_000)
    items = capped.value["contents"]
    assert capping.json_size(capped.value) <= 3_000
    assert items[0] == {"text": "message 0"} and items[-1] == {"text": "message 1999"}
    assert any(isinstance(i, str) and "more items truncated" in i for i in items)


def test_cap_leaves_small_values_alone_and_makes_nul_storable():
    capped = capping.cap({"a": "nul\x00here"}, 1_000)
    assert not capped.truncated and capped.value == {"a": "nul\u2400here"}


def test_nested_blobs_keep_only_their_size():
    response = types.FunctionResponse(name="render", response={"ok": True}, parts=[
        types.FunctionResponsePart(inline_data=types.FunctionResponseBlob(mime_type="image/jpeg", data=b"j" * 5_000))])
    part = payloads.part_json(types.Part(function_response=response))
    blob = part["function_response"]["parts"][0]["inline_data"]
    assert blob == {"mime_type": "image/jpeg", "size_bytes": 5_000}


def test_thought_signatures_are_kept_as_a_size():
    part = payloads.part_json(types.Part(text="hm", thought=True, thought_signature=b"s" * 300))
    assert part == {"text": "hm", "thought": True, "thought_signature": {"size_bytes": 300}}


def test_text_with_spans_marks_state_values_and_a_cut():
    text = inspection.text_with_spans("Hi Ada! …" + capping.STRING_MARK.format(n=5), [
        {"start": 3, "end": 6, "key": "user:name", "optional": False}, {"start": 50, "end": 60, "key": "late"}])
    assert [(s.text, s.key) for s in text.segments] == [("Hi ", ""), ("Ada", "user:name"), ("! …", "")]
    assert text.cut == 5


def test_the_diff_shows_what_changed_between_two_requests():
    before = ModelCall(request={"system_instruction": "Topic: cats.", "contents": [
        {"role": "user", "parts": [{"text": "hi"}]}]})
    after = ModelCall(request={"system_instruction": "Topic: dogs.", "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"a": 1}}}]}]})
    lines = [(d.kind, d.text) for d in inspection.request_diff(before, after)]
    assert ("del", "-Topic: cats.") in lines and ("add", "+Topic: dogs.") in lines
    assert ("add", '+call f({"a": 1})') in lines


def test_state_values_placed_in_the_contents_are_highlighted_there():
    call = ModelCall(request={"system_instruction": "static", "contents": [
        {"role": "user", "parts": [{"text": "Dear Ada"}]}],
        "spans": [{"in": "contents", "content": 0, "part": 0, "start": 5, "end": 8, "key": "user:name"}]})
    [content] = inspection.contents(call)
    assert [(s.text, s.key) for s in content.parts[0].text.segments] == [("Dear ", ""), ("Ada", "user:name")]
    assert [(s.text, s.key) for s in inspection.instruction(call).segments] == [("static", "")]
