"""Keyset pages of ADK's session list route: `page_size` and `page_token` (#27)."""
from __future__ import annotations

import pytest

from adkui.adk import DjangoSessionService
from sessions_app.apis.sessions import NEXT_PAGE_HEADER
from sessions_app.models import Session as SessionRow

pytestmark = pytest.mark.django_db

APP = "paging_app"
SESSIONS = f"/api/apps/{APP}/users/ann/sessions"


@pytest.fixture
def stored() -> list[str]:
    """Seven sessions of ann (two sharing an update time, to tie-break on the id) and one of bob."""
    service = DjangoSessionService()
    ids = [f"s{n}" for n in range(7)]
    for sid in ids:
        service.create_session_sync(app_name=APP, user_id="ann", session_id=sid, state={"user:n": 1})
    service.create_session_sync(app_name=APP, user_id="bob", session_id="b0")
    SessionRow.objects.filter(session_id__in=["s2", "s3"]).update(update_time=SessionRow.objects.get(session_id="s2").update_time)
    return [s.id for s in service.list_sessions_sync(app_name=APP, user_id="ann").sessions]


def pages(client, size: int) -> list[list[str]]:
    found, token = [], None
    while True:
        response = client.get(SESSIONS, {"page_size": size, **({"page_token": token} if token else {})})
        assert response.status_code == 200
        found.append([s["id"] for s in response.json()])
        token = response.headers.get(NEXT_PAGE_HEADER)
        if token is None:
            return found


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50])
def test_pages_walk_the_whole_list_in_adks_order_once(client, stored, size):
    walked = pages(client, size)
    assert [sid for page in walked for sid in page] == stored
    assert all(len(page) == size for page in walked[:-1]) and 0 < len(walked[-1]) <= size


def test_without_page_size_the_route_answers_as_adks_does(client, stored):
    response = client.get(SESSIONS)
    assert [s["id"] for s in response.json()] == stored and NEXT_PAGE_HEADER not in response.headers
    assert response.json()[0]["state"] == {"user:n": 1} and response.json()[0]["events"] == []


def test_a_page_sees_sessions_updated_after_the_walk_began_at_the_end(client, stored):
    first = client.get(SESSIONS, {"page_size": 3})
    DjangoSessionService().create_session_sync(app_name=APP, user_id="ann", session_id="late")
    rest = client.get(SESSIONS, {"page_size": 50, "page_token": first.headers[NEXT_PAGE_HEADER]})
    assert [s["id"] for s in rest.json()] == [*stored[3:], "late"]


@pytest.mark.parametrize("query, field", [
    ({"page_size": 0}, "page_size"),
    ({"page_size": 1001}, "page_size"),
    ({"page_size": "x"}, "page_size"),
    ({"page_size": 2, "page_token": "not-a-token"}, "page_token"),
    ({"page_size": 2, "page_token": "WzEsIDJd"}, "page_token"),  # base64 JSON of [1, 2]: not ours
    ({"page_token": "WzEuMCwgImEiLCAiYiJd"}, "page_token"),  # a well-formed token without page_size
    ({"page_size": 2, "include_eval": "true"}, "page_size"),
])
def test_bad_paging_input_is_a_400_naming_the_field(client, stored, query, field):
    response = client.get(SESSIONS, query)
    assert response.status_code == 400
    assert list(response.json()) == [field]
