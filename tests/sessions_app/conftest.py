"""Fixtures of the sessions_app tests."""
from __future__ import annotations

import pytest

from sessions_app.models import Session as SessionRow


@pytest.fixture
async def adk_session(service, request):
    """An ADK session of the test module's APP, and its row's pk (a module may define its own)."""
    session = await service.create_session(app_name=request.module.APP, user_id="u", session_id="s")
    pk = await SessionRow.objects.values_list("pk", flat=True).aget(session_id="s")
    return session, pk
