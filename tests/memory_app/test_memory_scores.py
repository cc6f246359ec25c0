"""Memory search scores say how well each memory matches, on SQLite and on PostgreSQL alike."""
from __future__ import annotations

import re

import pytest
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoSessionService
from memory_app import selectors
from sessions_app.models import Session as SessionRow

pytestmark = pytest.mark.django_db(transaction=True)

APP, USER = "score_app", "ann"
FOCUSED = "Lisbon trams"
IN_PASSING = "We talked about the budget, the flights, the hotel, the museums and, once, Lisbon"
ALL_WORDS = "The weather in Lisbon was windy"
ONE_WORD = "Lisbon"


def said(text: str, timestamp: float) -> Event:
    return Event(author="user", timestamp=timestamp, content=types.Content(role="user", parts=[types.Part(text=text)]))


def remember(memory, *texts: str) -> None:
    # Oldest first: a score that ignored relevance would put the newest first.
    events = [said(text, 1_700_000_000.0 + i) for i, text in enumerate(texts)]
    memory.add_events_to_memory_sync(app_name=APP, user_id=USER, session_id="s1", events=events)


def scores(query: str) -> dict[str, float]:
    found = selectors.memory_search(app_name=APP, user_id=USER, query=query)
    return {row.text(): score for row, score in found}


def test_a_focused_memory_scores_above_one_that_mentions_the_word_in_passing(memory):
    remember(memory, FOCUSED, IN_PASSING)
    found = scores("lisbon")
    assert set(found) == {FOCUSED, IN_PASSING}
    assert 0 < found[IN_PASSING] < found[FOCUSED] <= 1


def test_a_memory_holding_more_of_the_query_scores_higher(memory):
    remember(memory, ALL_WORDS, ONE_WORD)
    found = scores("lisbon weather")
    assert 0 < found[ONE_WORD] < found[ALL_WORDS] <= 1


def test_the_memory_service_returns_adks_response_best_match_first(memory):
    remember(memory, IN_PASSING, FOCUSED)
    response = memory.search_memory_sync(app_name=APP, user_id=USER, query="lisbon")
    assert isinstance(response, SearchMemoryResponse)
    assert [m.content.parts[0].text for m in response.memories] == [FOCUSED, IN_PASSING]


def test_the_memory_panel_shows_different_scores_for_better_and_worse_matches(client, memory, service):
    service.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    remember(memory, FOCUSED, IN_PASSING)
    pk = SessionRow.objects.get(session_id="s1").pk
    html = client.get(f"/memory/sessions/{pk}/memory/", {"q": "lisbon"}).content.decode()
    shown = [f"score {score:.3f}" for score in scores("lisbon").values()]
    assert len(set(shown)) == 2 and all(s in html for s in shown)
    assert html.index(FOCUSED) < html.index("once, Lisbon")


@pytest.mark.browser
def test_the_memory_panel_on_the_session_page_ranks_and_scores_matches_apart(page, live_server, memory):
    live_server.call(DjangoSessionService().create_session_sync, app_name=APP, user_id=USER, session_id="s1")
    live_server.call(remember, memory, IN_PASSING, FOCUSED)
    pk = SessionRow.objects.get(session_id="s1").pk
    page.goto(f"{live_server.url}/sessions/{pk}/")
    page.fill('input[aria-label="Search memory"]', "lisbon")
    page.locator('form[role="search"] button[type="submit"]').click()
    results = page.locator(".mem-result")
    expect(results).to_have_count(2)
    expect(results.first.locator(".mem-text")).to_have_text(FOCUSED)
    shown = [re.search(r"score (\d\.\d{3})", results.nth(i).text_content()).group(1) for i in range(2)]
    assert float(shown[0]) > float(shown[1]) > 0, shown
    assert not page.js_errors
