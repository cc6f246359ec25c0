"""Every page and API list runs as many queries with 50 rows as with 5, so an N+1 cannot come back (#27)."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app import page_tokens, timeline
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = pytest.mark.django_db

APP = "counts_app"
USERS = ("ann", "bob")


def said(text: str, *, delta: dict | None = None, error: bool = False) -> Event:
    return Event(
        author="agent", invocation_id="inv-1", error_code="E" if error else None,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
    )


def add_sessions(service, start: int, stop: int) -> None:
    """Sessions `start`..`stop` of the app, over two users, every third with an error."""
    for n in range(start, stop):
        session = service.create_session_sync(app_name=APP, user_id=USERS[n % 2], session_id=f"s{n}",
                                              state={"user:k": n})
        service.append_event_sync(session, said(f"word {n}", delta={"k": n, "app:k": n}, error=n % 3 == 0))


def add_events(service, start: int, stop: int) -> None:
    """Events `start`..`stop` of session "long", each changing every scope's keys."""
    session = service.get_session_sync(app_name=APP, user_id="ann", session_id="long")
    if session is None:
        session = service.create_session_sync(app_name=APP, user_id="ann", session_id="long")
    for n in range(start, stop):
        service.append_event_sync(session, said(f"word {n}", delta={"k": n, "user:k": n, "app:k": n}))


def long_pk() -> int:
    return SessionRow.objects.get(app__name=APP, session_id="long").pk


def newest_position() -> str:
    """The session browser's position of the app's newest session: the page after it lists the rest."""
    newest = SessionRow.objects.filter(app__name=APP).order_by("-update_time", "-pk").first()
    return page_tokens.encode(["-updated", newest.update_time, newest.pk])


def search_position() -> str:
    """The search's position of the newest event: the page after it lists the rest."""
    return page_tokens.encode([EventRow.objects.filter(session__app__name=APP).latest("pk").pk])


def queries(client, url: str) -> int:
    client.get(url)  # once first: what a page caches (its app, the agents it knows) is not what is counted
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


SESSION_LISTS = {
    "home page": lambda: "/",
    "app page": lambda: f"/apps/{APP}/",
    "app page sorted by health": lambda: f"/apps/{APP}/?sort=-errors",
    "app page needing attention": lambda: f"/apps/{APP}/?attention=1",
    "app page of one user": lambda: f"/apps/{APP}/?user=ann",
    "app page after a position": lambda: f"/apps/{APP}/?after={newest_position()}",
    "app page after sessions without a TTFT": lambda: f"/apps/{APP}/?sort=ttft&after={page_tokens.encode(['ttft', None, 10**9])}",
    "API session list": lambda: f"/api/apps/{APP}/users/ann/sessions",
    "API search": lambda: f"/api/apps/{APP}/search?q=word",
    "search page": lambda: f"/apps/{APP}/search/?q=word",
    "search page after a position": lambda: f"/apps/{APP}/search/?q=word&after={search_position()}",
    "API search after a position": lambda: f"/api/apps/{APP}/search?q=word&page_token={search_position()}",
}
EVENT_LISTS = {
    "session events (more rows)": lambda: f"/sessions/{long_pk()}/events/",
    "key history of a user key": lambda: f"/sessions/{long_pk()}/key-history/?key=user:k",
    "key history of an app key": lambda: f"/sessions/{long_pk()}/key-history/?key=app:k",
    "key history of a session key": lambda: f"/sessions/{long_pk()}/key-history/?key=k",
    "API events": lambda: f"/api/apps/{APP}/users/ann/sessions/long/events",
    "API session (ADK's get)": lambda: f"/api/apps/{APP}/users/ann/sessions/long",
    "search page of one session's events": lambda: f"/apps/{APP}/search/?q=word",
}


@pytest.mark.parametrize("url", SESSION_LISTS.values(), ids=SESSION_LISTS.keys())
def test_session_lists_query_alike_for_5_and_50_sessions(client, service, url: Callable[[], str]):
    add_sessions(service, 0, 5)
    few = queries(client, url())
    add_sessions(service, 5, 50)
    assert queries(client, url()) == few


@pytest.mark.parametrize("url", EVENT_LISTS.values(), ids=EVENT_LISTS.keys())
def test_event_lists_query_alike_for_5_and_50_events(client, service, url: Callable[[], str]):
    add_events(service, 0, 5)
    few = queries(client, url())
    add_events(service, 5, 50)
    assert queries(client, url()) == few


def test_the_session_page_queries_alike_for_few_and_many_events(client, service):
    """While the whole session fits on the first screen the page also shows its start (the initial
    state: one query); once older events exist it does not. Beyond that, rows add no query."""
    url = lambda: f"/sessions/{long_pk()}/"  # noqa: E731
    add_events(service, 0, 5)
    few = queries(client, url())
    add_events(service, 5, timeline.FIRST_PAGE)
    assert queries(client, url()) == few
    add_events(service, timeline.FIRST_PAGE, timeline.FIRST_PAGE + 1)
    many = queries(client, url())
    assert many == few - 1
    add_events(service, timeline.FIRST_PAGE + 1, 60)
    assert queries(client, url()) == many


def test_the_app_page_before_a_position_queries_no_more_for_50_sessions_than_for_5(client, service):
    """The last page, reached back from past the end. With 5 sessions the page before is short, so
    the browser shows the first page in full instead (one query more), which is why this is `<=`."""
    past_the_end = f"/apps/{APP}/?sort=-errors&before={page_tokens.encode(['-errors', -1, 0])}"
    add_sessions(service, 0, 5)
    few = queries(client, past_the_end)
    add_sessions(service, 5, 50)
    assert queries(client, past_the_end) <= few
