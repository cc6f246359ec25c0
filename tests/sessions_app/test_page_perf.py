"""The session page's cost (bench/http_bench.py measures it): queries that do not
grow with the session, markdown and row links computed once per process, the
agent graph's node counts kept per process and extended, never recounted.
Each cache must give exactly what the uncached path gives."""
from __future__ import annotations

import threading

import markdown as md
import nh3
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse, set_script_prefix
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adkui import settings as adkui_settings
from sessions_app import node_stats, selectors, timeline
from sessions_app.models import App
from sessions_app.models import Session as SessionRow
from sessions_app.templatetags import adkui

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "perf_app"
AGENT_APP = "trip_planner"  # an agent of the demo folder: its page draws the graph with node counts
# What the page costs in local dev (no login), whatever the session's length: the
# session, its events, their state changes, pairing, rewinds, node timings, state,
# chat and inspector totals; an agent's page also counts the graph's new events.
PAGE_QUERIES = {APP: 12, AGENT_APP: 13}


def turn(service, session, n: int, text: str = "") -> None:
    """A user message, a tool call and its response (with state), and a markdown reply."""
    inv = f"inv-{n}"
    call = types.FunctionCall(id=f"c{n}", name="plan_trip", args={"city": "Oslo"})
    response = types.FunctionResponse(id=f"c{n}", name="plan_trip", response={"status": "ok"})
    for event in (
        Event(author="user", invocation_id=inv, content=types.Content(role="user", parts=[types.Part(text=f"go {n}")])),
        Event(author="trip_planner", invocation_id=inv, content=types.Content(role="model", parts=[types.Part(function_call=call)])),
        Event(author="trip_planner", invocation_id=inv, content=types.Content(role="user", parts=[types.Part(function_response=response)]),
              actions=EventActions(state_delta={"city": "Oslo", "user:trips": n, "app:last": n})),
        Event(author="trip_planner", invocation_id=inv,
              content=types.Content(role="model", parts=[types.Part(text=text or f"**reply {n}**")])),
    ):
        service.append_event_sync(session, event)


def make_session(service, app: str, turns: int, session_id: str = "s"):
    session = service.create_session_sync(app_name=app, user_id="u", session_id=session_id, state={"k": 1})
    for n in range(turns):
        turn(service, session, n)
    return session, SessionRow.objects.get(app__name=app, session_id=session_id)


@pytest.mark.parametrize("app", [APP, AGENT_APP])
def test_page_queries_do_not_grow_with_the_session(client, service, django_assert_max_num_queries, app):
    short, short_row = make_session(service, app, 15, "short")  # 60 events: more than a page
    long, long_row = make_session(service, app, 40, "long")  # 160 events
    for row in (short_row, long_row):
        client.get(f"/sessions/{row.pk}/")  # the process's first look (the graph's counts are kept after it)
        with django_assert_max_num_queries(PAGE_QUERIES[app]):
            response = client.get(f"/sessions/{row.pk}/")
        assert response.status_code == 200
        assert f'id="event-{row.revision}"' in response.content.decode()


def test_markdown_is_sanitised_and_cached_alike(settings):
    text = "**bold** <script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)>"
    expected = nh3.clean(md.markdown(text, extensions=["fenced_code", "tables", "sane_lists"]),
                         link_rel="noopener noreferrer nofollow")
    first, again = adkui.markdown(text), adkui.markdown(text)
    assert first == again == expected
    assert "<strong>bold</strong>" in first and "<script" not in first and "onerror" not in first
    assert "javascript:" not in first


def test_markdown_converter_state_does_not_leak_between_texts():
    """Converters are reused, reset for each text: a plain text after a table
    renders as it would alone."""
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    alone = nh3.clean(md.markdown("plain *text*", extensions=["fenced_code", "tables", "sane_lists"]),
                      link_rel="noopener noreferrer nofollow")
    assert "<table>" in adkui.markdown(table)
    assert adkui._markdown_uncached("plain *text*") == alone


def test_markdown_from_many_threads():
    texts = [f"item **{i}**\n\n- a\n- b" for i in range(40)]
    results: dict[int, str] = {}

    def render(i: int) -> None:
        results[i] = adkui._markdown_uncached(texts[i])

    threads = [threading.Thread(target=render, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i] == adkui._markdown_uncached(texts[i]) and f"<strong>{i}</strong>" in results[i]
               for i in range(len(texts)))


def test_long_markdown_is_not_cached():
    text = "x" * (adkui.MARKDOWN_CACHED_CHARS + 1)
    before = adkui._markdown_html.cache_info().currsize
    assert adkui.markdown(text) == f"<p>{text}</p>"
    assert adkui._markdown_html.cache_info().currsize == before


def test_cached_url_reverses_as_url_does_under_any_script_prefix():
    assert adkui.cached_url("sessions_app:session_state", 7) == reverse("sessions_app:session_state", args=[7])
    try:
        set_script_prefix("/adkui/")
        assert adkui.cached_url("sessions_app:session_state", 7) == "/adkui/sessions/7/state/"
    finally:
        set_script_prefix("/")
    assert adkui.cached_url("sessions_app:session_state", 7) == "/sessions/7/state/"


def test_row_links_on_the_page(client, service):
    _, row = make_session(service, APP, 2)
    html = client.get(f"/sessions/{row.pk}/").content.decode()
    assert f'hx-get="/sessions/{row.pk}/state/?seq=1"' in html
    assert f'hx-get="/sessions/{row.pk}/rewind/?seq=1"' in html
    assert f'hx-get="/sessions/{row.pk}/fork/preview/?seq=1"' in html


def fresh_count(row: SessionRow) -> tuple[dict, int]:
    """The counts from scratch, bypassing the process's kept ones."""
    tally = node_stats._count(row, after=max(row.revision - node_stats.WINDOW, 0), tally=node_stats._Tally())
    return tally.result()


def as_plain(stats: dict) -> dict:
    return {k: (v.calls, round(v.seconds, 9)) for k, v in stats.items()}


def test_node_stats_kept_and_extended_equal_a_fresh_count(service, django_assert_max_num_queries):
    adk, row = make_session(service, AGENT_APP, 3)
    first, upto = node_stats.node_stats(row)
    assert upto == 12 and as_plain(first) == as_plain(fresh_count(row)[0])
    assert first["plan_trip"].calls == 3
    turn(service, adk, 3)
    row.refresh_from_db()
    with django_assert_max_num_queries(1):
        extended, upto = node_stats.node_stats(row)
    assert upto == 16 and as_plain(extended) == as_plain(fresh_count(row)[0])
    assert extended["plan_trip"].calls == 4
    extended["plan_trip"].calls = 99  # a caller's copy: what the process keeps is not touched
    assert node_stats.node_stats(row)[0]["plan_trip"].calls == 4


def test_node_stats_of_a_replaced_session_are_counted_afresh(service):
    adk, row = make_session(service, AGENT_APP, 2)
    node_stats.node_stats(row)
    key = (row.pk, row.session_id, row.create_time)
    # The kept counts no longer match what is stored (say the rows were replaced under the same key).
    node_stats._tallies[key].previous = (row.revision, "another-invocation", 0.0)
    stats, upto = node_stats.node_stats(row)
    assert upto == row.revision and as_plain(stats) == as_plain(fresh_count(row)[0])


def test_node_stats_window_counts_the_newest_events_only(service):
    _, row = make_session(service, AGENT_APP, 3)
    stats, upto = node_stats.node_stats(row, window=4)  # the last turn alone
    assert upto == 12 and stats["plan_trip"].calls == 1


def view_facts(views) -> list[tuple]:
    return [(v.seq, v.new_invocation, v.nodes, v.took) for v in views]


@pytest.mark.parametrize("before", [None, 31, 7])
def test_unfiltered_page_reads_its_previous_event_off_the_page(service, django_assert_max_num_queries, before):
    """The page's extra row (read to learn whether older events exist) stands for the
    queries of the event before the page: same invocation headers and node times."""
    _, row = make_session(service, AGENT_APP, 15)
    with django_assert_max_num_queries(8):
        views, _ = timeline.page(row, before=before, size=10)
    rows = selectors.event_rows_before(row, before=before, filters=selectors.Filters(), limit=10)[::-1]
    assert view_facts(views) == view_facts(timeline.views_for(row, rows))  # the queried way
    assert views[0].new_invocation == (views[0].row.invocation_id != selectors.previous_invocation_id(row, views[0].seq))


def test_filtered_page_still_asks_for_the_previous_event(service):
    _, row = make_session(service, AGENT_APP, 6)
    text_only = selectors.Filters(kind="text")
    views, _ = timeline.page(row, filters=text_only, size=5)
    rows = selectors.event_rows_before(row, before=None, filters=text_only, limit=5)[::-1]
    assert any(b.seq != a.seq + 1 for a, b in zip(views, views[1:]))  # not consecutive: asked for
    assert view_facts(views) == view_facts(timeline.views_for(row, rows))


def test_postgres_connections_are_pooled_unless_turned_off(monkeypatch):
    url = "postgres://u@db.internal:5432/adkui"
    monkeypatch.setenv("DB_POOL", "1")
    pooled = adkui_settings._database(url)
    # Requests' 10, and one for each of the session service's threads (sessions_app.db_threads).
    assert pooled["OPTIONS"]["pool"]["max_size"] == 10 + adkui_settings.ADKUI_SESSION_THREADS
    assert pooled["CONN_MAX_AGE"] == 0
    monkeypatch.setenv("DB_POOL", "0")
    assert "pool" not in adkui_settings._database(url).get("OPTIONS", {})
    monkeypatch.setenv("DB_POOL", "1")
    monkeypatch.setenv("DB_CONN_MAX_AGE", "60")  # persistent connections instead: Django allows one or the other
    assert "pool" not in adkui_settings._database(url).get("OPTIONS", {})
    assert "pool" not in adkui_settings._database("sqlite:///x.sqlite3").get("OPTIONS", {})


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statistics")
def test_a_sessions_forks_are_found_by_index_in_a_store_of_sessions_that_are_none(db):
    """Every session page asks for its forks. A full index on forked_from, all NULL, was rated
    useless by SQLite's ANALYZE and the query scanned every session (13.7 ms at 100 000)."""
    app = App.objects.create(name="forks_app")
    times = {"create_time": 1.0, "update_time": 1.0}
    SessionRow.objects.bulk_create(SessionRow(app=app, user_id="u", session_id=f"s{i}", **times) for i in range(5000))
    source = SessionRow.objects.first()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # while no session is a fork: a full index would be "5000 rows a value"
        for query in (source.forks.all(), SessionRow.objects.filter(replay_of=source)):
            sql, params = query.query.sql_with_params()
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "SCAN" not in plan and "INDEX session_" in plan, plan


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statistics")
def test_the_home_pages_counts_read_indexes_in_a_store_of_one_big_app(db):
    """The home page counts each app's sessions and those needing attention. Joined to the apps, with
    statistics of the sessions only (as the bulk builder leaves them), SQLite built a temporary index
    of every session for the first (130 ms at 100 000) and scanned every session for the second
    (46 ms); each now reads an index of the sessions table."""
    app = App.objects.create(name="big_app")
    times = {"create_time": 1.0, "update_time": 1.0}
    SessionRow.objects.bulk_create(SessionRow(app=app, user_id="u", session_id=f"s{i}", error_count=int(i % 20 == 0),
                                              **times) for i in range(5000))
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {SessionRow._meta.db_table}")
        with CaptureQueriesContext(connection) as queries:
            assert selectors.session_counts() == {"big_app": 5000}
            assert selectors.without_sandboxes(SessionRow.objects.all()).needing_attention().count() == 250
        assert len(queries.captured_queries) == 2
        for query in queries.captured_queries:
            cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "AUTOMATIC" not in plan and "SCAN sessions_app_session" not in plan, plan
