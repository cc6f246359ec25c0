"""Whatever got into the database before it was checked, no page may fail on it."""
from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import Event, Session

APP, USER = "trip_planner", "u"


@pytest.fixture
def session_with_bad_times(service) -> Session:
    service.create_session_sync(app_name=APP, user_id=USER, session_id="old", state={"k": 1})
    session = Session.objects.get(session_id="old")
    # As an unchecked writer left them: a timestamp no datetime holds, and a milliseconds epoch.
    for seq, timestamp in ((1, 1e308), (2, 1795364444546.0), (3, -1e11)):
        Event.objects.create(session=session, seq=seq, event_id=f"e{seq}", author="x", timestamp=timestamp,
                             data={"id": f"e{seq}", "author": "x", "timestamp": timestamp, "invocationId": "i"})
    Session.objects.filter(pk=session.pk).update(revision=3, update_time=1e308)
    return session


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/", f"/apps/{APP}/", "/sessions/{pk}/", "/sessions/{pk}/events/?before=3",
                                  "/sessions/{pk}/state/?seq=2", "/memory/sessions/{pk}/conversation/"])
def test_pages_render_timestamps_stored_before_they_were_checked(session_with_bad_times: Session, path: str) -> None:
    response = Client(raise_request_exception=False).get(path.replace("{pk}", str(session_with_bad_times.pk)))
    assert response.status_code == 200, response.content[:300]


@pytest.mark.django_db(transaction=True)
def test_an_app_name_with_a_slash_has_a_page_and_a_link(service) -> None:
    service.create_session_sync(app_name="team/agent", user_id=USER, session_id="s")
    client = Client(raise_request_exception=False)
    home = client.get("/")
    assert home.status_code == 200 and b'href="/apps/team/agent/"' in home.content
    page = client.get("/apps/team/agent/")
    assert page.status_code == 200 and b"team/agent" in page.content
