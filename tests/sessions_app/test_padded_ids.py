"""A padded session id reaches its session on create, get, append and delete, as in ADK's own services."""
from __future__ import annotations

import pytest
from google.adk.events import Event, EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from sessions_app.models import Session

PADDED = "  order-42\n"


@pytest.fixture(params=["adk-in-memory", "adk-sqlite", "django"])
def any_service(request, tmp_path):
    if request.param == "adk-in-memory":
        return InMemorySessionService()
    if request.param == "adk-sqlite":
        return SqliteSessionService(str(tmp_path / "session.db"))
    return request.getfixturevalue("service")


@pytest.mark.django_db(transaction=True)
async def test_a_padded_id_is_normalised_the_same_way_throughout(any_service) -> None:
    created = await any_service.create_session(app_name="shop", user_id="u", session_id=PADDED, state={"k": 1})
    assert created.id == "order-42"

    found = await any_service.get_session(app_name="shop", user_id="u", session_id=PADDED)
    assert found is not None and found.id == "order-42" and found.state["k"] == 1
    await any_service.append_event(found, Event(author="user", actions=EventActions(state_delta={"k": 2})))
    again = await any_service.get_session(app_name="shop", user_id="u", session_id=PADDED)
    assert again.state["k"] == 2 and len(again.events) == 1

    await any_service.delete_session(app_name="shop", user_id="u", session_id=PADDED)
    assert await any_service.get_session(app_name="shop", user_id="u", session_id="order-42") is None


@pytest.mark.django_db(transaction=True)
async def test_a_session_stored_under_a_padded_id_is_found_by_it_exactly(service) -> None:
    """A database ADK's SQL service wrote may keep padded ids: the exact row wins, as in ADK's SqliteSessionService."""
    await service.create_session(app_name="shop", user_id="u", session_id="order-42", state={"which": "stripped"})
    await service.create_session(app_name="shop", user_id="u", session_id="other")
    await Session.objects.filter(session_id="other").aupdate(session_id=PADDED)  # as an import would keep it

    found = await service.get_session(app_name="shop", user_id="u", session_id=PADDED)
    assert found.id == PADDED
    plain = await service.get_session(app_name="shop", user_id="u", session_id="order-42")
    assert plain.state["which"] == "stripped"
