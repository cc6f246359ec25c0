"""Search across an app's sessions, indexed by the database as events are appended
(FTS5 on SQLite, a GIN index on PostgreSQL: run with DATABASE_URL for the second)."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app import _append_sql, search, services
from sessions_app.keys import SessionKey
from sessions_app.models import App, Session
from sessions_app.models import Event as EventRow
from sessions_app.search import QueryError, search_events

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "search_app"


def said(text: str, *, author: str = "agent", delta: dict | None = None) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(author=author, invocation_id="inv-1", content=content, actions=EventActions(state_delta=delta or {}))


def called(name: str, args: dict) -> Event:
    part = types.Part(function_call=types.FunctionCall(id=f"call-{name}", name=name, args=args))
    return Event(author="agent", invocation_id="inv-1", content=types.Content(role="model", parts=[part]))


def answered(name: str, response: dict) -> Event:
    part = types.Part(function_response=types.FunctionResponse(id=f"call-{name}", name=name, response=response))
    return Event(author="agent", invocation_id="inv-1", content=types.Content(role="user", parts=[part]))


@pytest.fixture
def store(service):
    """Append events to a session through DjangoSessionService, as a Runner does; return its row."""
    def append(session_id: str, *events: Event, user_id: str = "ann", app_name: str = APP) -> Session:
        session = service.get_session_sync(app_name=app_name, user_id=user_id, session_id=session_id)
        if session is None:
            session = service.create_session_sync(app_name=app_name, user_id=user_id, session_id=session_id)
        for event in events:
            service.append_event_sync(session, event)
        return Session.objects.get(app__name=app_name, user_id=user_id, session_id=session_id)
    return append


def found(query: str, app_name: str = APP, **kwargs) -> list[tuple[str, int]]:
    results = search_events(App.objects.get(name=app_name), query, **kwargs)
    return [(hit.session.session_id, hit.seq) for hit in results.hits]


def test_text_tool_names_args_responses_and_state_are_found(store):
    store("s-1", said("Your parcel is on its way"), called("lookup_order", {"order_id": "A-17", "rush": True}),
          answered("lookup_order", {"status": "shipped", "eta_days": 3}), said("ok", delta={"user:tier": "platinum"}))
    assert found("parcel") == [("s-1", 1)]
    assert found("lookup_order") == [("s-1", 3), ("s-1", 2)]  # the response and the call, newest first
    assert found("A-17") == found("17") == found("order_id") == [("s-1", 2)]  # an arg's value and key
    assert found("rush true") == [("s-1", 2)]
    assert found("shipped") == found("eta_days 3") == [("s-1", 3)]
    assert found("platinum") == found("tier") == [("s-1", 4)]
    assert found("nowhere") == []


def test_hits_say_what_matched_with_a_marked_snippet(store):
    store("s-1", said("refund please", delta={"refund_reason": "late"}), called("issue_refund", {"amount": 20}))
    hits = search_events(App.objects.get(name=APP), "refund").hits
    assert [(h.seq, h.matched) for h in hits] == [(2, ("tool",)), (1, ("text", "state"))]
    assert "<mark>refund</mark> please" in hits[1].snippets[0].html
    assert "issue_<mark>refund</mark>({&quot;amount&quot;: 20})" == hits[0].snippets[0].html


def test_all_words_must_match_phrases_keep_their_order_and_prefixes_extend(store):
    store("s-1", said("the refund policy changed"), said("policy on any refund"), said("refunds are slow"))
    assert found("refund policy") == [("s-1", 2), ("s-1", 1)]
    assert found('"refund policy"') == [("s-1", 1)]
    assert found('"policy refund"') == []
    assert found("refund*") == [("s-1", 3), ("s-1", 2), ("s-1", 1)]
    assert found('"refund pol"*') == [("s-1", 1)]
    assert found("REFUNDS AND slow") == [("s-1", 3)]
    assert found("refund slow") == []  # no stemming: "refund" is not "refunds"


def test_only_the_app_and_the_user_asked_for(store):
    store("s-ann", said("invoice ready"), user_id="ann")
    store("s-bob", said("invoice lost"), user_id="bob")
    store("s-other", said("invoice elsewhere"), app_name="other_app")
    assert sorted(found("invoice")) == [("s-ann", 1), ("s-bob", 1)]
    assert found("invoice", user_id="bob") == [("s-bob", 1)]
    assert found("invoice", app_name="other_app") == [("s-other", 1)]


def test_newest_events_come_first_and_pages_follow_on(store):
    store("older", *[said(f"note {i}") for i in range(3)])
    store("newer", said("note a"), said("note b"))
    app = App.objects.get(name=APP)
    assert found("note") == [("newer", 2), ("newer", 1), ("older", 3), ("older", 2), ("older", 1)]
    page = search_events(app, "note", limit=2, offset=2)
    assert page.total == 5 and [(h.session.session_id, h.seq) for h in page.hits] == [("older", 3), ("older", 2)]
    assert search_events(app, "note", limit=2, offset=10).hits == []
    store("older", said("note again"))  # its newest event is now the newest of all
    first = search_events(app, "note", limit=3)
    assert [(h.session.session_id, h.seq) for h in first.hits] == [("older", 4), ("newer", 2), ("newer", 1)]
    rest = search_events(app, "note", limit=3, after=first.next_token)
    assert [(h.session.session_id, h.seq) for h in rest.hits] == [("older", 3), ("older", 2), ("older", 1)]
    assert rest.next_token == ""
    # A page shows its hits by session, each session's in the order they happened.
    assert [(s.session_id, [h.seq for h in hits]) for s, hits in first.by_session] == [("older", [4]), ("newer", [1, 2])]


def test_a_common_word_is_counted_only_up_to_the_cap(store, client, monkeypatch):
    monkeypatch.setattr(search, "COUNT_CAP", 3)
    store("s-1", *[said(f"note {i}") for i in range(5)])
    results = search_events(App.objects.get(name=APP), "note", limit=2)
    assert results.capped and results.shown_total == 3 and len(results.hits) == 2 and results.next_token
    assert not search_events(App.objects.get(name=APP), "note 4").capped
    assert "More than 3 events match" in client.get(f"/apps/{APP}/search/", {"q": "note"}).content.decode()
    body = client.get(f"/api/apps/{APP}/search", {"q": "note"}).json()
    assert body["total"] == 3 and body["totalCapped"] is True and len(body["hits"]) == 5


def test_a_deleted_session_leaves_no_hits_and_no_index_rows(store):
    kept = store("kept", said("secret plan"))
    gone = store("gone", said("secret plan"), called("shred", {"doc": "secret"}))
    gone_ids = list(gone.events.values_list("pk", flat=True))
    services.session_delete(key=SessionKey(APP, "ann", "gone"))
    assert found("secret") == [("kept", 1)]
    assert indexed_ids("secret") == [kept.events.get().pk]
    assert not set(gone_ids) & set(indexed_ids("shred"))


def test_an_event_changed_or_deleted_by_hand_is_reindexed_or_forgotten(store):
    row = store("s-1", said("first draft"), said("keep me"))
    first = row.events.get(seq=1)
    EventRow.objects.filter(pk=first.pk).update(data={**first.data, "content": {"parts": [{"text": "final copy"}]}})
    assert found("draft") == [] and found("final") == [("s-1", 1)]
    EventRow.objects.filter(pk=first.pk).delete()
    assert found("final") == [] and indexed_ids("final") == []
    assert found("keep") == [("s-1", 2)]


def test_rows_no_adk_model_would_write_are_indexed_as_far_as_they_go(client, store):
    """Stored JSON of any shape (written by an older adkui or by hand) neither breaks the index nor the page."""
    row = store("s-1", said("fine"))
    odd = [{"content": 7, "actions": {"state_delta": [1, 2]}, "error_message": "odd one"},
           {"content": {"parts": 7}, "actions": 3},
           {"content": {"parts": [7, {"text": ["not", "a", "string"]}, {"function_call": "odd call"}]}},
           {"actions": {"state_delta": {"odd key": {"deep": [None, True, 1.5]}}}}]
    for seq, data in enumerate(odd, start=2):
        EventRow.objects.create(session=row, seq=seq, event_id=f"odd-{seq}", timestamp=float(seq), data=data)
    assert found("odd") == [("s-1", 5), ("s-1", 2)]
    response = client.get(f"/apps/{APP}/search/", {"q": "odd"})
    assert response.status_code == 200 and response.content.decode().count('class="search-hit"') == 2


def test_a_huge_event_is_stored_and_its_start_indexed(store):
    """PostgreSQL refuses a tsvector over 1 MB and words over 2 KB: the index takes the
    first 100,000 characters, so no event the API accepts fails to append."""
    words = " ".join(f"w{i:07d}x" for i in range(150_000))  # 1.5 MB of distinct words
    store("s-1", said(f"start {'z' * 5000} {words} finish"))
    assert found("start") == [("s-1", 1)]
    assert found("w0000042x") == [("s-1", 1)]
    assert found("finish") == []  # past what is indexed


@pytest.mark.parametrize("hostile", [
    '"', '"unclosed', "OR", "NOT", "-", "a -b", "NEAR(a b)", "body:x", "^x", "x*y*", "(", "'", "\\", "&|!<->",
    "x:*", "a & !b", "\x00", "a\x00b", "\ud800x", "SELECT 1; --", "%", "😀", "x" * 600, "w " * 40, "AND OR NOT",
])
def test_hostile_queries_are_refused_or_searched_never_raised_by_the_database(store, hostile):
    store("s-1", said("a b x w and or not"))
    try:
        results = search_events(App.objects.get(name=APP), hostile)
    except QueryError:
        return
    assert results.total == len(results.hits)


def test_the_search_page_lists_hits_linking_to_the_session_at_the_event(client, store):
    row = store("s-1", said("hello"), said("the <b>refund</b> is <script>alert(1)</script> done"))
    response = client.get(f"/apps/{APP}/search/", {"q": "refund"})
    html = response.content.decode()
    assert response.status_code == 200 and "1 event matches" in html
    assert f'href="/sessions/{row.pk}/?at=2"' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<mark>refund</mark>" in html and "<b>" not in html


def test_an_htmx_request_for_the_results_gets_only_the_results(client, store):
    store("s-1", said("refund"))
    htmx = {"HX-Request": "true", "HX-Target": "search-results"}
    response = client.get(f"/apps/{APP}/search/", {"q": "refund"}, headers=htmx)
    html = response.content.decode()
    assert 'id="search-count"' in html and "<html" not in html and 'id="search-form"' not in html


def test_the_search_page_pages(client, store):
    row = store("s-1", *[said(f"item {i}") for i in range(25)])
    first = client.get(f"/apps/{APP}/search/", {"q": "item"}).content.decode()
    assert first.count('class="search-hit"') == 20 and 'id="search-more"' in first
    after = re.search(r'after=([^"&]+)"', first).group(1)
    more = {"HX-Request": "true", "HX-Target": "search-more"}
    second = client.get(f"/apps/{APP}/search/?q=item&after={after}", headers=more).content.decode()
    # Only the next hits (and no further button): htmx puts them in place of "more results".
    assert second.count('class="search-hit"') == 5 and f"/sessions/{row.pk}/?at=1" in second
    assert 'id="search-more"' not in second and 'id="search-count"' not in second
    assert {h for h in re.findall(r'id="hit-[^"]+"', first)}.isdisjoint(re.findall(r'id="hit-[^"]+"', second))
    refused = client.get(f"/apps/{APP}/search/", {"q": "item", "after": "two"})
    assert refused.status_code == 400 and "after" in refused.content.decode()


@pytest.mark.parametrize("hostile", [
    '"', "'", "\\", "-", "*", "NEAR(", "a:b", "^x", "&|!", "x" * 600, "%00", "\u202e", "<script>", "AND",
])
def test_hostile_queries_get_the_page_never_a_server_error(client, store, hostile):
    store("s-1", said("something"))
    response = client.get(f"/apps/{APP}/search/", {"q": hostile})
    assert response.status_code == 200
    assert "<script>" not in response.content.decode().split('id="search-results"')[1]


def test_a_query_with_nothing_to_search_says_so_next_to_the_field(client, store):
    store("s-1", said("something"))
    html = client.get(f"/apps/{APP}/search/", {"q": "- * ("}).content.decode()
    assert 'id="search-error"' in html and "The search has no word to search for" in html
    long = client.get(f"/apps/{APP}/search/", {"q": "x" * 501}).content.decode()
    assert "The search is 501 characters long; at most 500" in long


def test_a_nul_in_the_query_string_is_refused_before_the_view(client, store):
    store("s-1", said("something"))
    response = client.get(f"/apps/{APP}/search/?q=a%00b")
    assert response.status_code == 400 and b"q:" in response.content


def test_unknown_app_is_404_and_an_agent_without_sessions_searches_nothing(client):
    assert client.get("/apps/no_such_app/search/", {"q": "x"}).status_code == 404
    html = client.get("/apps/trip_planner/search/", {"q": "x"}).content.decode()
    assert "No events match" in html


def test_an_app_named_with_a_slash_is_searched(client, store):
    store("s-1", said("nested hello"), app_name="team/agent")
    html = client.get("/apps/team/agent/search/", {"q": "nested"}).content.decode()
    assert "1 event matches" in html


def test_the_app_page_has_the_search_box(client, store):
    store("s-1", said("x"))
    html = client.get(f"/apps/{APP}/").content.decode()
    assert f'action="/apps/{APP}/search/"' in html


def test_the_api_answers_hits_as_json(client, store):
    store("s-1", said("hello"), called("lookup_order", {"order_id": "A-17"}), user_id="ann")
    store("s-2", said("order <b>lost</b>"), user_id="bob")
    response = client.get(f"/api/apps/{APP}/search", {"q": "order", "user_id": "bob"})
    assert response.status_code == 200
    snippet = {"kind": "text", "html": "<mark>order</mark> &lt;b&gt;lost&lt;/b&gt;", "matched": True}
    hit = {"sessionId": "s-2", "userId": "bob", "seq": 1, "author": "agent", "matched": ["text"], "snippets": [snippet]}
    body = response.json()
    assert body["total"] == 1 and [{k: v for k, v in h.items() if k != "timestamp"} for h in body["hits"]] == [hit]
    assert body["hits"][0]["timestamp"] == EventRow.objects.get(session__session_id="s-2").timestamp
    paged = client.get(f"/api/apps/{APP}/search", {"q": "order", "limit": 1, "offset": 1}).json()
    assert paged["total"] == 2 and [h["sessionId"] for h in paged["hits"]] == ["s-1"]
    first = client.get(f"/api/apps/{APP}/search", {"q": "order", "limit": 1}).json()
    assert [h["sessionId"] for h in first["hits"]] == ["s-2"] and first["nextPageToken"]
    second = client.get(f"/api/apps/{APP}/search", {"q": "order", "limit": 1, "page_token": first["nextPageToken"]}).json()
    assert [h["sessionId"] for h in second["hits"]] == ["s-1"] and "nextPageToken" not in second


@pytest.mark.parametrize(("params", "field"), [
    ({"q": '"'}, "q"), ({"q": "- *"}, "q"), ({"q": "x" * 501}, "q"), ({}, "q"), ({"q": "x", "limit": 0}, "limit"),
    ({"q": "x", "offset": -1}, "offset"), ({"q": "x", "limit": "many"}, "limit"),
    ({"q": "x", "page_token": "nope"}, "page_token"), ({"q": "x", "page_token": "WzFd", "offset": 1}, "page_token"),
])
def test_the_api_refuses_what_it_cannot_search_naming_the_field(client, store, params, field):
    store("s-1", said("x"))
    response = client.get(f"/api/apps/{APP}/search", params)
    assert response.status_code == 400 and field in response.json()


def test_the_api_knows_apps_as_the_other_routes_do(client):
    assert client.get("/api/apps/no_such_app/search", {"q": "x"}).status_code == 404
    assert client.get("/api/apps/trip_planner/search", {"q": "x"}).json() == {"total": 0, "totalCapped": False, "hits": []}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner")
def test_postgresql_answers_from_the_gin_index(store):
    """The selector's expression is the index's: on a session of many events the planner takes the index."""
    row = store("s-1", said("needle in here"))
    with connection.cursor() as cursor:
        cursor.execute(filler_sql(), [row.events.get().pk])  # straight in SQL: this is about the plan
        # As autovacuum would soon: the fillers' entries leave GIN's pending list for the index proper,
        # whose planner's estimate otherwise depends on what earlier tests left in that list.
        cursor.execute("SELECT gin_clean_pending_list('sessions_app_event_search'::regclass)")
        cursor.execute("ANALYZE sessions_app_event")
        with CaptureQueriesContext(connection) as queries:
            assert found("needle") == [("s-1", 1)]
        plans = []
        for query in queries.captured_queries:
            if "(sessions_app_event.search) @@" in query["sql"]:  # the count, and the page of pks
                cursor.execute("EXPLAIN " + query["sql"])
                plans.append("\n".join(line for line, in cursor.fetchall()))
    assert len(plans) == 2
    for plan in plans:  # a rare word: its few hits from the index, not a walk of every event
        assert re.search(r"Index Scan on sessions_app_event_search\b", plan), plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner")
def test_postgresql_walks_past_other_apps_events_without_computing_their_vectors(store):
    """Migration 0017: a common word's walk of the newest events read each one's stored vector. It ran
    the vector's function on every event walked, those of other apps too (176 ms at the server for
    1 000 newer events of another app), before the join could tell their app."""
    row = store("s-1", said("needle in here"))
    with connection.cursor() as cursor:
        cursor.execute(filler_sql(), [row.events.get().pk])
        cursor.execute("ANALYZE sessions_app_event")
        with CaptureQueriesContext(connection) as queries:
            assert found("hay") == [("s-1", n) for n in range(5001, 4981, -1)]
        searches = [q["sql"] for q in queries.captured_queries if "(sessions_app_event.search) @@" in q["sql"]]
        assert len(searches) == 2
        for sql in searches:
            cursor.execute("EXPLAIN (VERBOSE) " + sql)
            plan = "\n".join(line for line, in cursor.fetchall())
            assert "sessions_app_event_search_vector" not in plan, plan


def filler_sql(copies: int = 5000) -> str:
    """Copies of one event row, each with its own seq, id and text."""
    made = {"seq": "e.seq + n", "event_id": "'filler-' || n", "data": FILLER_DATA}
    columns = _append_sql.EVENT_COLUMNS
    values = ", ".join(made.get(c, f"e.{c}") for c in columns)
    return (f"INSERT INTO sessions_app_event ({', '.join(columns)}) SELECT {values}"
            f" FROM sessions_app_event AS e, generate_series(1, {copies}) AS n WHERE e.id = %s")


FILLER_DATA = ("jsonb_build_object('content', jsonb_build_object('parts',"
               " jsonb_build_array(jsonb_build_object('text', 'hay number ' || n))))")


def indexed_ids(word: str) -> list[int]:
    """Event ids the index itself holds for `word` (not joined with the events)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT rowid FROM sessions_app_event_search WHERE sessions_app_event_search MATCH %s",
                           [f'"{word}"'])
        else:  # the index is on the rows themselves: what a scan of it finds
            cursor.execute("SELECT id FROM sessions_app_event WHERE sessions_app_event_search_vector(data)"
                           " @@ phraseto_tsquery('simple', %s)", [word])
        return sorted(row[0] for row in cursor.fetchall())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner")
def test_postgresql_keeps_fine_statistics_of_the_words_events_hold():
    """Migrations 0015 and 0017 (the stored vector's column): with the default target a word no event
    holds was planned as a walk of every event."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstattarget FROM pg_attribute WHERE attrelid = 'sessions_app_event'::regclass"
                       " AND attname = 'search'")
        assert cursor.fetchone()[0] == 1000


def _vm_steps(query: str) -> int:
    """SQLite virtual-machine steps (in hundreds) of a search: the rows its statements walk,
    counted by the machine instead of timed. FTS5's own work on its lists is C, not steps."""
    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0

    connection.connection.set_progress_handler(tick, 100)
    try:
        found(query)
    finally:
        connection.connection.set_progress_handler(None, 100)
    return ticks[0]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's FTS5 index")
def test_sqlite_finds_an_apps_hits_without_walking_other_apps_newer_ones(store):
    """Migration 0018: the index holds each event's app, and a search matches it with the words. The
    walk of the newest hits joined each to its session to learn its app, so 300 newer events of
    another app holding the word were walked one by one (48.6 ms for 50 000 in the scale bench)."""
    store("s-1", said("hay for the quiet app"))
    found("hay")
    alone = _vm_steps("hay")
    store("busy", *[said(f"hay number {n}") for n in range(300)], app_name="busy_app")
    behind = _vm_steps("hay")
    assert found("hay") == [("s-1", 1)]
    assert found("hay", app_name="busy_app")[:2] == [("busy", 300), ("busy", 299)]
    assert behind <= alone + 5, (alone, behind)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's FTS5 index")
def test_sqlite_forgets_a_deleted_sessions_events_with_their_app(store):
    """A contentless index forgets a row only given the values it indexed, the app's token too."""
    gone = store("s-1", said("needle"), said("more needle"))
    kept = store("s-2", said("needle"))
    services.session_delete(key=SessionKey(APP, "ann", "s-1"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid FROM sessions_app_event_search WHERE sessions_app_event_search MATCH %s",
                       [f'app : "app{gone.app_id}"'])
        assert sorted(row[0] for row in cursor.fetchall()) == list(kept.events.values_list("pk", flat=True))
    assert indexed_ids("needle") == list(kept.events.values_list("pk", flat=True))
    assert found("needle") == [("s-2", 1)]
