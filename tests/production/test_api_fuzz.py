"""The API's contract, driven by its own OpenAPI schema: schemathesis generates valid and
invalid requests for every operation, and no answer may be a server error, an
undocumented status or content type, a body the schema does not describe, or a success
for input the schema forbids. Runs on SQLite and, in CI's second phase, PostgreSQL."""
from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from pydantic.alias_generators import to_camel
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from adkui.wsgi import application

APP, USER, SESSION = "trip_planner", "user", "session"
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
# Examples per operation and generation mode: enough for CI's budget (the whole module in well under
# three minutes on two cores with -n 2); ADKUI_FUZZ_EXAMPLES raises it for a longer local hunt.
EXAMPLES = int(os.environ.get("ADKUI_FUZZ_EXAMPLES", "6"))


@pytest.fixture(autouse=True)
def _db(transactional_db, service):
    """Every generated request runs on the test database, with a real session to hit."""
    service.create_session_sync(app_name=APP, user_id=USER, session_id=SESSION, state={"k": 1})


# The contract (#29), every operation, valid and invalid input (schemathesis' default modes):
# never a 5xx, every answer's status, type and body as documented, invalid input refused.
CONTRACT = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            negative_data_rejection]


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_operation_keeps_its_contract(case):
    if case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE:
        _aim_at_the_stored_session(case)
    case.call_and_validate(checks=CONTRACT)


REAL = {"app_name": APP, "user_id": USER, "session_id": SESSION}


def _aim_at_the_stored_session(case) -> None:
    """Valid requests name the stored session (random ids would only ever meet 404s), so the
    answers of real sessions, runs and artifacts are checked too; invalid ones stay as generated."""
    for name, value in REAL.items():
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = value
        camel = to_camel(name)
        if isinstance(case.body, dict) and camel in case.body:
            case.body[camel] = value


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
