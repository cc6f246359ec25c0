"""With logins on, OTLP exporters need an editor's API token, as the rest of the API does."""
from __future__ import annotations

import pytest
from django.test import Client

from inspector_app.models import TraceSpan
from tests.inspector_app.test_otlp import adk_spans, body

pytestmark = pytest.mark.django_db


def _send(token: str | None) -> int:
    headers = {"Authorization": f"Token {token}"} if token else {}
    return Client().post("/v1/traces", data=body(adk_spans()).SerializeToString(),
                         content_type="application/x-protobuf", headers=headers).status_code


@pytest.mark.parametrize("role, expected", [("anonymous", 403), ("viewer", 403), ("editor", 200)])
def test_otlp_ingest_takes_an_editors_token(production, client_as, roles, role, expected):
    token = None if role == "anonymous" else client_as(role).token
    assert _send(token) == expected
    assert TraceSpan.objects.exists() == (expected == 200)
