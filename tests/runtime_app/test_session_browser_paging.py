"""The session browser pages by keyset (#27): every sort walks forwards and back across pages
without skipping or repeating a row, ties and sessions without a value included."""
from __future__ import annotations

import html
import re

import pytest

from runtime_app import views
from sessions_app import page_tokens, services
from sessions_app.models import Session

pytestmark = pytest.mark.django_db
APP = "paging_app"
N = 14


@pytest.fixture
def sessions() -> None:
    """N sessions whose every sorted column has ties, and whose cost and TTFT are missing on some."""
    for i in range(N):
        session = services.session_create(app_name=APP, user_id="ann", session_id=f"s{i:02}")
        Session.objects.filter(pk=session.pk).update(
            update_time=1000 + i // 3, revision=i % 3, error_count=i % 2, tool_loop_count=i % 3,
            prompt_tokens=(i % 4) * 10, output_tokens=i % 2, cost_usd=None if i % 3 == 0 else (i % 2) * 0.5,
            ttft_ms=None if i % 4 == 0 else (i % 3) * 100.0,
        )


def page(client, query: str = "") -> tuple[list[str], str | None, str | None]:
    """The session ids listed, and the queries of the previous and next links."""
    response = client.get(f"/apps/{APP}/{query}")
    assert response.status_code == 200, response.content
    text = response.content.decode()
    links = {rel: html.unescape(href) for href, rel in re.findall(r'<a href="(\?[^"]*)" rel="(prev|next)">', text)}
    return re.findall(r'class="mono">([^<]+)</a>', text), links.get("prev"), links.get("next")


@pytest.mark.parametrize("sort", views.SORTS)
def test_each_sort_pages_forwards_and_back_without_skipping_or_repeating(client, sessions, monkeypatch, sort):
    whole, _, no_next = page(client, f"?sort={sort}")
    assert len(whole) == N and no_next is None  # one page of 25: the order to page through
    monkeypatch.setattr(views, "SESSIONS_PER_PAGE", 4)
    forwards, query, pages = [], f"?sort={sort}", []
    while query is not None:
        names, previous, query = page(client, query)
        assert (previous is None) == (not pages)
        forwards += names
        pages.append(names)
    assert forwards == whole and len(pages) == 4
    # Back from the last page by its "previous" links, page by page, to the first (which has none).
    query = previous
    for expected in reversed(pages[:-1]):
        names, query, following = page(client, query)
        assert names == expected and following is not None
    assert query is None


def test_a_page_link_keeps_showing_its_rows_when_new_sessions_arrive(client, sessions, monkeypatch):
    monkeypatch.setattr(views, "SESSIONS_PER_PAGE", 4)
    _, _, second = page(client)
    before = page(client, second)[0]
    services.session_create(app_name=APP, user_id="bob", session_id="newcomer")
    assert page(client, second)[0] == before


def test_a_previous_link_back_at_the_start_shows_a_full_first_page(client, sessions, monkeypatch):
    monkeypatch.setattr(views, "SESSIONS_PER_PAGE", 4)
    first, _, second = page(client)
    _, previous, _ = page(client, second)
    Session.objects.filter(session_id=first[0]).delete()
    names, no_previous, _ = page(client, previous)
    assert names == first[1:] + [page(client, second)[0][0]] and no_previous is None


@pytest.mark.parametrize(("param", "token"), [
    ("after", "not-a-token"), ("before", "%%%"), ("after", page_tokens.encode(["-updated", 1.0])),
    ("after", page_tokens.encode(["-events", 1, 2])),  # another sort's position
    ("before", page_tokens.encode(["-updated", "x", 2])), ("after", page_tokens.encode(["-updated", 1.0, True])),
    ("after", page_tokens.encode({"a": 1})),
])
def test_a_bad_position_is_a_400_page_naming_the_parameter(client, sessions, param, token):
    response = client.get(f"/apps/{APP}/", {param: token})
    assert response.status_code == 400
    assert f"The &#x27;{param}&#x27; parameter is not a position" in response.content.decode()


def test_the_count_is_of_the_whole_list_not_the_page(client, sessions, monkeypatch):
    monkeypatch.setattr(views, "SESSIONS_PER_PAGE", 4)
    text = client.get(f"/apps/{APP}/").content.decode()
    assert f'data-count="{N}">{N} sessions</span>' in text
