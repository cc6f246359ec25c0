"""The conversation view: roles, call/result pairing by id (parallel calls too), errors, tokens."""
from __future__ import annotations

import pytest
from django.urls import reverse
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.genai import types

from runtime_app.scripted_model import Call, Reply, ScriptedModel
from memory_app import conversation
from memory_app.conversation import ASSISTANT, SUMMARY, TOOL, USER
from sessions_app.models import Session


def user(text: str) -> Event:
    return Event(author="user", content=types.Content(role="user", parts=[types.Part(text=text)]))


def calls(*pairs: tuple[str, str]) -> Event:
    parts = [types.Part(function_call=types.FunctionCall(id=cid, name=name, args={"city": cid})) for cid, name in pairs]
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=50, candidates_token_count=7)
    return Event(author="bot", content=types.Content(role="model", parts=parts), usage_metadata=usage)


def results(*items: tuple[str, str, dict]) -> Event:
    parts = [types.Part(function_response=types.FunctionResponse(id=cid, name=name, response=r)) for cid, name, r in items]
    return Event(author="bot", content=types.Content(role="user", parts=parts))


def numbered(*events: Event) -> list[tuple[int, Event]]:
    return [(i + 1, e) for i, e in enumerate(events)]


def test_parallel_calls_are_each_linked_to_their_own_result():
    rows = numbered(
        user("weather in Paris and Oslo?"),
        calls(("c-paris", "get_weather"), ("c-oslo", "get_weather")),
        # ADK merges parallel results into one event; order need not follow the calls.
        results(("c-oslo", "get_weather", {"forecast": "snow"}), ("c-paris", "get_weather", {"forecast": "sun"})),
        Event(author="bot", content=types.Content(role="model", parts=[types.Part(text="Sun in Paris, snow in Oslo.")])),
    )
    conv = conversation.history(rows)
    assert [m.role for m in conv.messages] == [USER, ASSISTANT, TOOL, TOOL, ASSISTANT]
    paris, oslo = conv.messages[1].calls
    assert [r.response["forecast"] for r in paris.results] == ["sun"]
    assert [r.response["forecast"] for r in oslo.results] == ["snow"]
    assert paris.results[0].call is paris and oslo.results[0].call is oslo
    # Anchors are unique per call and per result, so the page can link both ways.
    anchors = [paris.anchor, oslo.anchor, paris.results[0].anchor, oslo.results[0].anchor]
    assert len(set(anchors)) == 4
    assert conv.unanswered_calls == 0


def test_tool_errors_orphans_and_unanswered_calls_are_flagged():
    rows = numbered(
        calls(("a", "lookup"), ("b", "lookup")),
        results(("a", "lookup", {"status": "error", "error_message": "no station"})),
        results(("zzz", "lookup", {"ok": True})),
    )
    conv = conversation.history(rows)
    failed, orphan = conv.messages[1], conv.messages[2]
    assert failed.result.is_error and failed.is_error
    assert orphan.result.call is None and not orphan.is_error
    assert conv.unanswered_calls == 1  # "b" never got a result
    assert conversation.is_tool_error({"error": "boom"})
    assert not conversation.is_tool_error({"status": "ok"}) and not conversation.is_tool_error("error")


def test_model_errors_are_flagged_on_the_message():
    failed = Event(author="bot", error_code="RESOURCE_EXHAUSTED", error_message="quota")
    conv = conversation.history(numbered(user("hi"), failed))
    assert conv.messages[1].role == ASSISTANT and conv.messages[1].error == "RESOURCE_EXHAUSTED: quota"


def test_tokens_come_from_the_model_when_reported_else_are_estimated():
    rows = numbered(user("x" * 40), calls(("a", "f")), results(("a", "f", {"k": "v"})))
    conv = conversation.history(rows)
    first, call, result = conv.messages
    assert (first.tokens, first.tokens_from_model) == (10, False)  # 40 characters / 4
    assert (call.tokens, call.tokens_from_model) == (7, True)  # candidates_token_count
    assert result.tokens == (len("f") + len('{"k": "v"}') + 3) // 4
    assert conv.total_tokens == 10 + 7 + result.tokens
    assert conversation.last_prompt_tokens([e for _, e in rows]) == 50


def test_the_model_view_hides_compacted_events_behind_their_summary():
    from google.adk.events.event_actions import EventActions, EventCompaction

    old, older_answer, recent = user("old question"), calls(("a", "f")), user("recent question")
    old.timestamp, older_answer.timestamp, recent.timestamp = 1.0, 2.0, 4.0
    summary = Event(author="user", timestamp=3.0, actions=EventActions(compaction=EventCompaction(
        start_timestamp=1.0, end_timestamp=2.0,
        compacted_content=types.Content(role="model", parts=[types.Part(text="They asked an old question.")]),
    )))
    events = [old, older_answer, summary, recent]
    history = conversation.history(numbered(*events))
    assert [m.role for m in history.messages] == [USER, ASSISTANT, SUMMARY, USER]
    replaced = history.messages[2].replaces
    assert (replaced.first_seq, replaced.last_seq, replaced.count) == (1, 2, 2)
    seen = conversation.model_view(events, agent_name="bot")
    assert [(m.role, m.texts) for m in seen.messages] == [
        (SUMMARY, ["They asked an old question."]), (USER, ["recent question"])
    ]


@pytest.mark.django_db(transaction=True)  # the service writes from asgiref's worker thread
async def test_parallel_calls_from_a_real_run_pair_up_by_adk_ids(service, async_client):
    def weather(city: str) -> dict:
        """Weather of a city."""
        if city == "Atlantis":
            return {"status": "error", "error_message": "no station"}
        return {"status": "ok", "city": city}

    model = ScriptedModel(replies=[
        Reply(function_calls=[Call("weather", {"city": c}) for c in ("Paris", "Oslo", "Atlantis")]),
        Reply(text="Done."),
    ])
    runner = Runner(app_name="conv_app", agent=LlmAgent(name="bot", model=model, tools=[weather]), session_service=service)
    await service.create_session(app_name="conv_app", user_id="ann", session_id="p1")
    message = types.Content(role="user", parts=[types.Part(text="weather please")])
    [e async for e in runner.run_async(user_id="ann", session_id="p1", new_message=message)]
    stored = await service.get_session(app_name="conv_app", user_id="ann", session_id="p1")

    conv = conversation.history(numbered(*stored.events))
    made = [c for m in conv.messages for c in m.calls]
    assert len(made) == 3 and all(c.id and c.id.startswith("adk-") for c in made)
    for call in made:
        assert len(call.results) == 1 and call.results[0].response.get("city", "Atlantis") == call.args["city"]
    assert [c.results[0].is_error for c in made] == [False, False, True]

    pk = (await Session.objects.aget(session_id="p1")).pk
    response = await async_client.get(reverse("memory_app:conversation", args=[pk]))
    html = response.content.decode()
    assert response.status_code == 200
    for call in made:  # each call links to its own result and back
        assert f'href="#{call.results[0].anchor}"' in html and f'id="{call.results[0].anchor}"' in html
        assert f'href="#{call.anchor}"' in html and f'data-call-id="{call.id}"' in html
    assert "tool error" in html and "What the model sees now" in html
