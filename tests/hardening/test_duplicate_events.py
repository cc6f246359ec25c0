"""An ADK event id is stored at most once per session, however many copies arrive at once."""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions

from sessions_app import services
from sessions_app.keys import SessionKey
from sessions_app.models import Event, Session

APP = "dup_app"
CLIENTS, ROUNDS = 8, 5
BEFORE, WITH_CONSTRAINT = ("sessions_app", "0003_event_rewind_before"), ("sessions_app", "0004_event_unique_event_id")


def _events_url(session_id: str) -> str:
    return f"/api/apps/{APP}/users/u/sessions/{session_id}/events"


def _post_at_once(url: str, body: str) -> list[tuple[int, dict]]:
    """POST `body` from CLIENTS threads released together, each with its own database connection."""
    barrier = threading.Barrier(CLIENTS)

    def post(_: int) -> tuple[int, dict]:
        try:
            client = Client()
            barrier.wait()
            response = client.post(url, body, content_type="application/json")
            return response.status_code, response.json()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(post, range(CLIENTS)))


@pytest.mark.django_db(transaction=True)
def test_a_retry_posted_many_times_at_once_is_stored_once_and_the_others_get_409(service):
    """A client retrying while its first POST is in flight: one copy is stored, the rest are refused."""
    service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    for n in range(ROUNDS):
        event_id = f"retry-{n}"
        body = json.dumps({"id": event_id, "author": "client", "invocationId": "i",
                           "actions": {"stateDelta": {"app:hits": n}}})
        answers = _post_at_once(_events_url("s"), body)
        codes = sorted(code for code, _ in answers)
        assert codes == [201] + [409] * (CLIENTS - 1), (event_id, codes)
        assert all(event_id in payload["detail"] for code, payload in answers if code == 409)
        assert Event.objects.filter(event_id=event_id).count() == 1
    seqs = list(Event.objects.filter(session__session_id="s").order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, ROUNDS + 1))  # refused copies took no sequence number


@pytest.mark.django_db(transaction=True)
def test_appending_a_stored_event_id_again_raises_already_exists_and_changes_nothing(service):
    service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    key = SessionKey(APP, "u", "s")
    services.event_append(key=key, event=AdkEvent(id="e1", author="a", actions=EventActions(state_delta={"n": 1})))
    with pytest.raises(AlreadyExistsError, match="e1"):
        services.event_append(key=key, event=AdkEvent(id="e1", author="a", actions=EventActions(state_delta={"n": 2})))
    session = Session.objects.get(session_id="s")
    assert session.revision == 1 and session.state == {"n": 1}
    # The same id in another session is another event.
    service.create_session_sync(app_name=APP, user_id="u", session_id="other")
    services.event_append(key=SessionKey(APP, "u", "other"), event=AdkEvent(id="e1", author="a"))


@pytest.mark.django_db(transaction=True)
def test_the_database_itself_refuses_a_second_row_with_the_same_event_id(service):
    service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    first = services.event_append(key=SessionKey(APP, "u", "s"), event=AdkEvent(id="e1", author="a"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.create(session_id=first.session_id, seq=2, event_id="e1", timestamp=1.0, data={})


@pytest.mark.django_db(transaction=True)
def test_the_migration_stops_on_stored_duplicates_and_names_them():
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    try:
        old = executor.loader.project_state([BEFORE]).apps
        app = old.get_model("sessions_app", "App").objects.create(name=APP)
        session = old.get_model("sessions_app", "Session").objects.create(
            app=app, user_id="u", session_id="s", create_time=0, update_time=0, revision=3)
        OldEvent = old.get_model("sessions_app", "Event")
        for seq, event_id in ((1, "twice"), (2, "twice"), (3, "once")):
            OldEvent.objects.create(session=session, seq=seq, event_id=event_id, timestamp=seq, data={})
        with pytest.raises(RuntimeError, match=r"(?s)'twice'.*#1, #2.*migrate again"):
            MigrationExecutor(connection).migrate([WITH_CONSTRAINT])
        OldEvent.objects.filter(seq=2).update(event_id="twice~dup2")  # what the message suggests
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert list(Event.objects.order_by("seq").values_list("event_id", flat=True)) == ["twice", "twice~dup2", "once"]
