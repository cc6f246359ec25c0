"""The session browser and the session page, through Django's test client."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app import timeline, views
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "view_app"


def say(service, session, text, *, author="agent", delta=None, **kwargs):
    event = Event(
        author=author, invocation_id=kwargs.pop("invocation_id", "inv-1"),
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}), **kwargs,
    )
    service.append_event_sync(session, event)
    return event


@pytest.fixture
def adk_session(service):
    session = service.create_session_sync(app_name=APP, user_id="ann", session_id="s-1", state={"user:name": "Ann", "topic": "cats"})
    say(service, session, "hello **world**", delta={"topic": "dogs", "user:name": None, "app:hits": 1})
    return session


def row(adk_session) -> SessionRow:
    return SessionRow.objects.get(session_id=adk_session.id)


def test_app_list_shows_demo_agent_and_stored_apps(client, adk_session):
    html = client.get("/").content.decode()
    assert "trip_planner" in html and APP in html


def test_session_browser_filters_searches_and_counts(client, service, adk_session):
    service.create_session_sync(app_name=APP, user_id="bob", session_id="other-77")
    html = client.get(f"/apps/{APP}/").content.decode()
    assert "s-1" in html and "other-77" in html
    only_bob = client.get(f"/apps/{APP}/?user=bob").content.decode()
    assert "other-77" in only_bob and ">s-1<" not in only_bob
    searched = client.get(f"/apps/{APP}/?q=77").content.decode()
    assert "other-77" in searched and ">s-1<" not in searched


def test_unknown_app_and_session_are_404(client):
    assert client.get("/apps/nope/").status_code == 404
    assert client.get("/sessions/999999/").status_code == 404
    assert client.get("/sessions/999999/state/?seq=1").status_code == 404


def test_create_session_with_valid_and_invalid_state(client, adk_session):
    response = client.post(f"/apps/{APP}/", {"user_id": "cy", "session_id": "new-one", "state": '{"user:a": 1, "b": 2}'})
    created = SessionRow.objects.get(session_id="new-one")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{created.pk}/"
    bad = client.post(f"/apps/{APP}/", {"user_id": "cy", "session_id": "broken", "state": '{"a": '})
    assert bad.status_code == 200 and "Not valid JSON" in bad.content.decode()
    not_object = client.post(f"/apps/{APP}/", {"user_id": "cy", "session_id": "broken", "state": "[1, 2]"})
    assert "must be a JSON object" in not_object.content.decode()
    duplicate = client.post(f"/apps/{APP}/", {"user_id": "cy", "session_id": "new-one", "state": ""})
    assert "already exists" in duplicate.content.decode()
    assert not SessionRow.objects.filter(session_id="broken").exists()
    assert SessionRow.objects.filter(session_id="new-one").count() == 1


def test_session_page_shows_timeline_diff_and_initial_state(client, adk_session):
    html = client.get(f"/sessions/{row(adk_session).pk}/").content.decode()
    assert "<strong>world</strong>" in html  # markdown rendered
    assert "initial state" in html and "user:name" in html
    assert 'class="changed"' in html and 'class="cleared"' in html and 'class="added"' in html
    assert f'ws-connect="/ws/sessions/{row(adk_session).pk}/events/?after=1"' in html


def test_a_rewrite_with_an_equal_value_is_shown_muted_never_as_a_change(client, service, adk_session):
    pk = row(adk_session).pk
    # #2 writes topic again as "dogs" (and n = 1 where 1.0 was would be a change: compared as JSON).
    say(service, adk_session, "again", delta={"topic": "dogs", "n": 1})
    say(service, adk_session, "again", delta={"topic": "dogs", "n": 1.0})
    html = client.get(f"/sessions/{pk}/").content.decode()
    again = html[html.index('id="event-3"'):]
    assert '<tr class="rewrite" data-key="topic">' in again and "unchanged rewrite" in again
    assert '<tr class="changed" data-key="n">' in again
    # The state panel does not highlight it as changed by #3; the key's history says what it was.
    panel = client.get(f"/sessions/{pk}/state/?seq=3").content.decode()
    assert 'hl" data-scope="session" data-key="n"' in panel and 'hl" data-scope="session" data-key="topic"' not in panel
    history = client.get(f"/sessions/{pk}/key-history/?key=topic").content.decode()
    assert history.count("unchanged rewrite") == 2 and history.count('class="old"') == 1  # #2 and #3; cats -> dogs


def test_agent_html_is_never_executed(client, service, adk_session):
    say(service, adk_session, '<script>alert(1)</script><img src=x onerror="alert(2)"> [x](javascript:alert(3)) "\'><b',
        delta={"evil": "<script>alert(4)</script>"})
    html = client.get(f"/sessions/{row(adk_session).pk}/").content.decode()
    assert "<script>alert" not in html and "onerror=" not in html and "javascript:alert" not in html
    assert "&lt;script&gt;alert(4)" in html


def test_state_as_of_an_event_and_key_history(client, service, adk_session):
    pk = row(adk_session).pk
    say(service, adk_session, "later", delta={"topic": "birds"})
    first = client.get(f"/sessions/{pk}/state/?seq=1").content.decode()
    assert "State as of #1" in first and "dogs" in first and "birds" not in first
    initial = client.get(f"/sessions/{pk}/state/?seq=0").content.decode()
    assert "cats" in initial and "Ann" in initial
    history = client.get(f"/sessions/{pk}/key-history/?key=topic").content.decode()
    newest, older = "&quot;dogs&quot;</span> → &quot;birds&quot;", "&quot;cats&quot;</span> → &quot;dogs&quot;"
    assert history.index(newest) < history.index(older)


def test_large_sessions_load_a_page_and_older_on_request(client, service, adk_session):
    for i in range(120):
        say(service, adk_session, f"message {i}", invocation_id=f"inv-{i // 10}")
    pk = row(adk_session).pk
    html = client.get(f"/sessions/{pk}/").content.decode()
    assert "message 119" in html and "message 60" not in html and "Load older events" in html
    older = client.get(f"/sessions/{pk}/events/?before=72").content.decode()
    assert "message 69" in older and "message 20" in older and "message 70" not in older


def test_filters_by_author_and_kind(client, service, adk_session):
    say(service, adk_session, "from the user", author="user")
    service.append_event_sync(adk_session, Event(author="agent", error_code="BOOM", error_message="it broke"))
    pk = row(adk_session).pk
    users = client.get(f"/sessions/{pk}/?author=user").content.decode()
    assert "from the user" in users and "hello" not in users
    errors = client.get(f"/sessions/{pk}/?kind=error").content.decode()
    assert "it broke" in errors and "from the user" not in errors


def test_delete_asks_then_deletes(client, adk_session):
    pk = row(adk_session).pk
    assert "Delete session" in client.get(f"/sessions/{pk}/delete/").content.decode()
    response = client.post(f"/sessions/{pk}/delete/")
    assert response.status_code == 302 and not SessionRow.objects.filter(pk=pk).exists()


def test_a_compaction_event_shows_as_a_summary_naming_its_range(client, service, adk_session):
    from google.adk.events.event_actions import EventCompaction

    first = say(service, adk_session, "old one", timestamp=1000.0)
    say(service, adk_session, "old two", timestamp=1001.0)
    summary = types.Content(role="model", parts=[types.Part(text="They talked about **dogs**.")])
    service.append_event_sync(adk_session, Event(
        author="user", invocation_id="inv-c", timestamp=1002.0,
        actions=EventActions(compaction=EventCompaction(start_timestamp=first.timestamp, end_timestamp=1001.0,
                                                        compacted_content=summary)),
    ))
    html = client.get(f"/sessions/{row(adk_session).pk}/").content.decode()
    assert 'class="badge compaction"' in html
    assert "(#2–#3)" in html and "<strong>dogs</strong>" in html


def test_an_agent_that_fails_to_load_shows_its_traceback_not_a_crash(client, settings, tmp_path):
    from runtime_app import agents

    package = tmp_path / "broken_agent"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text("raise RuntimeError('missing GOOGLE_API_KEY for the broken agent')\n")
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    agents._loader.cache_clear()
    try:
        html = client.get("/apps/broken_agent/").content.decode()
        assert "This agent failed to load" in html and "missing GOOGLE_API_KEY for the broken agent" in html
        assert "broken_agent" in client.get("/").content.decode()
        created = client.post("/apps/broken_agent/", {"user_id": "u", "session_id": "s", "state": ""})
        page = client.get(created["Location"]).content.decode()
        assert "failed to load, so it cannot run" in page and 'id="chat-form"' not in page
    finally:
        agents._loader.cache_clear()


def test_a_long_key_history_pages_by_its_older_changes_button(client, service, adk_session, monkeypatch):
    for n in range(5):
        say(service, adk_session, f"n {n}", delta={"count": n})
    url = f"/sessions/{row(adk_session).pk}/key-history/?key=count"
    every = re.findall(r"this session #(\d+)", client.get(url).content.decode())
    assert len(every) == 5
    monkeypatch.setattr(views, "KEY_HISTORY_PAGE", 3)
    first = client.get(url).content.decode()
    assert re.findall(r"this session #(\d+)", first) == every[:3] and "older changes" in first
    older = re.search(r'before=(\d+)"', first).group(1)
    rest = client.get(f"{url}&before={older}").content.decode()
    assert re.findall(r"this session #(\d+)", rest) == every[3:]
    assert "older changes" not in rest and "Never changed" not in rest
    assert 'id="key-history-card"' not in rest  # rows to put in place of the button, not a second card


@pytest.mark.parametrize("before", ["x", "-1", "1.5", "9" * 19, ""])
def test_a_bad_key_history_position_is_a_400_naming_it(client, service, adk_session, before):
    response = client.get(f"/sessions/{row(adk_session).pk}/key-history/", {"key": "topic", "before": before})
    assert response.status_code == 400 and response.content.decode().startswith("before:")


def test_a_row_missing_what_an_event_usually_has_renders_without_it(adk_session):
    """The rows are Jinja2 templates (sessions_app/jinja_env.py): an attribute missing anywhere in a
    chain (`view.event.actions.compaction`, here no `actions` at all) renders as nothing, as in
    Django's templates, rather than failing the page."""
    session = row(adk_session)
    stored = session.events.order_by("seq").first()
    view = timeline.EventView(row=stored, event=SimpleNamespace(error_message=None), parts=[], changes=[],
                              new_invocation=True)
    html = render_to_string("sessions_app/partials/event_row.html", {"view": view, "session": session})
    assert f'<article id="event-{stored.seq}"' in html and "compaction" not in html


def test_a_value_included_from_a_django_template_is_escaped_once():
    html = render_to_string("sessions_app/partials/value.html", {"value": {"k": "<b>x</b>"}})
    assert "<b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html and "&amp;lt;" not in html
