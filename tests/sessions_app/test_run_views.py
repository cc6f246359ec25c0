"""Chat, rewind and fork from the session page (server side)."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from google.genai import types

from inspector_app.models import ModelCall, ToolCall
from runtime_app import runs
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow
from sessions_app.keys import SessionKey

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "trip_planner"  # the bundled demo agent


def run_turn(session, text: str) -> None:
    async def go():
        request = runs.RunRequest(key=SessionKey(APP, session.user_id, session.id),
                                  new_message=types.Content(role="user", parts=[types.Part(text=text)]))
        async for _ in runs.run_agent(request):
            pass
    async_to_sync(go)()


@pytest.fixture
def demo(service):
    session = service.create_session_sync(app_name=APP, user_id="ann", state={"trip_budget": 100})
    run_turn(session, "Hi there!")
    run_turn(session, "Please plan a trip to Oslo")
    return session, SessionRow.objects.get(session_id=session.id)


def test_chat_rejects_an_empty_message_and_bad_state_json(client, demo):
    _, row = demo
    empty = client.post(f"/sessions/{row.pk}/chat/", {"message": "  "})
    assert "Write a message" in empty.content.decode()
    bad = client.post(f"/sessions/{row.pk}/chat/", {"message": "hi", "state_delta": "{nope"})
    assert "Not valid JSON" in bad.content.decode()
    assert EventRow.objects.filter(session=row).count() == row.revision


def test_session_page_offers_chat_for_a_loaded_agent(client, demo):
    _, row = demo
    html = client.get(f"/sessions/{row.pk}/").content.decode()
    assert 'id="chat-form"' in html and "rewind" in html and "fork" in html


def test_rewind_preview_then_rewind_undoes_the_invocation(client, service, demo):
    session, row = demo
    plan_seq = EventRow.objects.filter(session=row, has_function_call=True).values_list("seq", flat=True).first()
    preview = client.get(f"/sessions/{row.pk}/rewind/?seq={plan_seq}").content.decode()
    assert "Rewind to before invocation" in preview and "destination" in preview
    invocation = EventRow.objects.get(session=row, seq=plan_seq).invocation_id
    done = client.post(f"/sessions/{row.pk}/rewind/apply/", {"invocation_id": invocation})
    assert done.status_code == 200 and "Rewound" in done.content.decode()
    stored = service.get_session_sync(app_name=APP, user_id="ann", session_id=session.id)
    assert stored.events[-1].actions.rewind_before_invocation_id == invocation
    assert stored.state["destination"] is None  # ADK's rewind sets keys to None, it does not delete them
    # ADK rebuilds the old state from event deltas only, so it also clears initial-state keys;
    # the preview said so before anything happened.
    assert stored.state["trip_budget"] is None and "trip_budget" in preview
    page = client.get(f"/sessions/{row.pk}/").content.decode()
    assert "rewound" in page and f"rewind before {invocation}" in page


def test_rewind_to_an_unknown_invocation_is_refused(client, demo):
    _, row = demo
    response = client.post(f"/sessions/{row.pk}/rewind/apply/", {"invocation_id": "no-such"})
    assert response.status_code == 400 and "Could not rewind" in response.content.decode()
    assert EventRow.objects.filter(session=row).count() == row.revision


def test_fork_continues_the_history_up_to_an_event(client, demo):
    _, row = demo
    response = client.post(f"/sessions/{row.pk}/fork/", {"seq": "1"})
    fork = SessionRow.objects.exclude(pk=row.pk).get()
    assert response.status_code == 303 and response["Location"] == f"/sessions/{fork.pk}/"
    assert fork.user_id == "ann" and fork.state == {"trip_budget": 100} and fork.revision == 1
    assert fork.forked_from == row and fork.forked_at_seq == 1
    assert client.post(f"/sessions/{row.pk}/fork/", {"seq": "999"}).status_code == 404


def test_the_source_session_page_links_its_forks_oldest_first(client, demo):
    _, row = demo
    client.post(f"/sessions/{row.pk}/fork/", {"seq": "1"})
    client.post(f"/sessions/{row.pk}/fork/", {"seq": "0"})
    first, second = SessionRow.objects.exclude(pk=row.pk).order_by("pk")
    page = client.get(f"/sessions/{row.pk}/").content.decode()
    forks = page[page.index('id="session-forks"'):]
    assert "2 forks:" in forks
    assert forks.index(f">{first.session_id}</a> at #1") < forks.index(f">{second.session_id}</a> at #0")
    assert f'href="/sessions/{first.pk}/"' in forks
    assert 'id="session-forks"' not in client.get(f"/sessions/{first.pk}/").content.decode()


def test_fork_asks_first_in_the_page_showing_what_it_copies(client, demo):
    _, row = demo
    preview = client.get(f"/sessions/{row.pk}/fork/preview/", {"seq": "1"})
    html = preview.content.decode()
    assert preview.status_code == 200 and "Fork at #1?" in html and "trip_budget" in html
    assert f'hx-post="/sessions/{row.pk}/fork/"' in html and 'id="fork-confirm"' in html
    assert not SessionRow.objects.exclude(pk=row.pk).exists()  # asking made nothing
    assert client.get(f"/sessions/{row.pk}/fork/preview/", {"seq": "999"}).status_code == 404
    assert client.get(f"/sessions/{row.pk}/fork/preview/", {"seq": "x"}).status_code == 404


def test_a_fork_keeps_the_model_and_tool_calls_behind_its_events(client, demo):
    _, row = demo
    copied = EventRow.objects.filter(session=row, seq__lte=4)
    ids = set(copied.values_list("event_id", flat=True))
    client.post(f"/sessions/{row.pk}/fork/", {"seq": "4"})
    fork = SessionRow.objects.exclude(pk=row.pk).get()
    behind = set(ModelCall.objects.filter(session=row, event_id__in=ids).values_list("event_id", flat=True))
    assert behind and set(ModelCall.objects.filter(session=fork).values_list("event_id", flat=True)) == behind
    # The tool call and the model call after #4 belong to events the fork does not have.
    assert ModelCall.objects.filter(session=fork).count() < ModelCall.objects.filter(session=row).count()
    assert not ToolCall.objects.filter(session=fork).exclude(call_event_id__in=ids).exists()
    assert ModelCall.objects.filter(session=fork).values("adk_session_id").distinct().get() == {
        "adk_session_id": fork.session_id}
    page = client.get(f"/sessions/{fork.pk}/").content.decode()
    assert "no model calls recorded" not in page and "Forked from" in page and "fork</span> forked" not in page


def test_new_chat_starts_a_fresh_session_and_offloads_this_one_to_memory(client, settings, demo):
    from memory_app.models import SessionMemory

    settings.ADKUI_MEMORY_OFFLOAD = ["reset"]
    session, row = demo
    response = client.post(f"/sessions/{row.pk}/reset/")
    fresh = SessionRow.objects.exclude(pk=row.pk).get()
    assert response.status_code == 303 and response["Location"] == f"/sessions/{fresh.pk}/"
    assert fresh.user_id == "ann" and fresh.revision == 0
    assert SessionMemory.objects.filter(session=row).exists()
