"""Schemathesis drives every operation of the served OpenAPI schema with
generated input: no request may end in a server error."""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from adkui.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture(autouse=True)
def _db(transactional_db, service):
    """Every generated request runs on the test database, with a real session to hit."""
    service.create_session_sync(app_name="trip_planner", user_id="user", session_id="session", state={"k": 1})


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_causes_a_server_error(case):
    case.call_and_validate(checks=[not_a_server_error])


def test_an_event_that_trips_genai_validators_is_a_400(client):
    """Found by the fuzzer: genai raised AttributeError on this, which was a 500."""
    event = {"author": "x", "content": {"parts": [{"text": "hi", "mediaProcessing": {}}]}}
    response = client.post("/api/apps/trip_planner/users/user/sessions/session/events", event,
                           content_type="application/json")
    assert response.status_code == 400 and "non_field_errors" in response.json()


def test_nul_characters_are_refused_cleanly_on_every_database(client):
    """PostgreSQL's jsonb cannot hold U+0000; the answer must be a 400 on both databases, nothing stored."""
    from sessions_app.models import Event as EventRow

    event = {"author": "x", "content": {"parts": [{"text": "nul \u0000 here"}]}, "actions": {"stateDelta": {"k\u0000": 1}}}
    response = client.post("/api/apps/trip_planner/users/user/sessions/session/events", event,
                           content_type="application/json")
    assert response.status_code == 400 and "U+0000" in str(response.json())
    assert EventRow.objects.count() == 0
