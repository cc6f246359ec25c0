"""Fixtures of the sessions_app tests."""
from __future__ import annotations

import pytest
from channels.layers import channel_layers

from sessions_app.models import Session as SessionRow


@pytest.fixture
async def adk_session(service, request):
    """An ADK session of the test module's APP, and its row's pk (a module may define its own)."""
    session = await service.create_session(app_name=request.module.APP, user_id="u", session_id="s")
    pk = await SessionRow.objects.values_list("pk", flat=True).aget(session_id="s")
    return session, pk


@pytest.fixture
def own_layer(settings):
    # The in-process layer, of this test's own: on a Redis shared by the xdist
    # workers, this session's group name is another worker's session's too
    # (and the relay writes notices only on this layer).
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
