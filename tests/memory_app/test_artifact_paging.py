"""The artifacts panel lists a keyset page of names at a time: as many queries with 5 artifacts
as with 50, and "more artifacts" walks every name once, the session's own first."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from google.genai import types

from memory_app import selectors

from .test_panels import save, session, url  # noqa: F401 (session is a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
ITEM = re.compile(r'<li(?: class="selected" aria-current="true")? data-artifact="([^"]+)" data-latest="(\d+)">')
MORE = re.compile(r'hx-get="([^"]*after=[^"]+)"')


def add(first: int, count: int) -> None:
    for i in range(first, first + count):
        name = f"user:note_{i:03}.txt" if i % 4 == 0 else f"note_{i:03}.txt"
        save(name, types.Part(text=f"v0 of {i}"))
        if i % 3 == 0:
            save(name, types.Part(text=f"v1 of {i}"))


def panel_queries(client, address: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(address, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return len(ctx), response.content.decode()


def test_the_panel_costs_the_same_with_5_artifacts_as_with_50(client, session):  # noqa: F811
    add(0, 5)
    address = url("artifacts_panel", session)
    client.get(address)
    few, html = panel_queries(client, address)
    assert len(ITEM.findall(html)) == 5 and 'id="artifacts-more"' not in html
    add(5, 45)
    many, html = panel_queries(client, address)
    assert len(ITEM.findall(html)) == min(50, selectors.ARTIFACTS_PAGE)
    assert few == many and 'id="artifact-count">50 in this session' in html


def test_more_artifacts_walks_every_name_once_own_first_with_its_latest_version(client, session, monkeypatch):  # noqa: F811
    monkeypatch.setattr(selectors, "ARTIFACTS_PAGE", 4)
    add(0, 13)
    html = client.get(url("artifacts_panel", session), HTTP_HX_REQUEST="true").content.decode()
    seen = ITEM.findall(html)
    while link := MORE.search(html):
        html = client.get(link.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
        assert 'id="artifacts-panel"' not in html  # the next names only, in place of the button
        seen += ITEM.findall(html)
    own = sorted(f"note_{i:03}.txt" for i in range(13) if i % 4)
    users = sorted(f"user:note_{i:03}.txt" for i in range(13) if i % 4 == 0)
    assert [name for name, _ in seen] == own + users
    assert all(latest == ("1" if int(name[-7:-4]) % 3 == 0 else "0") for name, latest in seen)


def test_an_artifact_past_the_first_page_opens_by_name(client, session, monkeypatch):  # noqa: F811
    monkeypatch.setattr(selectors, "ARTIFACTS_PAGE", 2)
    add(0, 6)
    html = client.get(url("artifacts_panel", session), {"name": "user:note_004.txt"}).content.decode()
    assert 'value="user:note_004.txt" data-open-artifact' in html and "v0 of 4" in html
    refused = client.get(url("artifacts_panel", session), {"after": "WzFd"})
    assert refused.status_code == 400 and "after" in refused.content.decode()
