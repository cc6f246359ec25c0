"""An append nobody watches renders nothing and sends nothing; one a viewer
watches reaches it. On the in-process layer and, with REDIS_URL, on Redis,
where the viewer may be connected to any worker."""
from __future__ import annotations

import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.conf import settings as django_settings
from google.adk.events.event import Event
from google.genai import types

from adkui.settings import redis_channel_layer
from sessions_app import broadcast
from sessions_app.broadcast import session_group
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)
APP = "unwatched_app"

LAYERS = ["memory"] + (["redis"] if django_settings.REDIS_URL else [])


@pytest.fixture(params=LAYERS)
def layer(request, settings):
    if request.param == "redis":
        config = redis_channel_layer(settings.REDIS_URL)
        config["CONFIG"]["prefix"] = f"adkui-test-{uuid.uuid4().hex}"  # no member left by another test
    else:
        config = {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    settings.CHANNEL_LAYERS = {"default": config}
    channel_layers.backends.clear()
    yield get_channel_layer()
    channel_layers.backends.clear()


def said(text: str) -> Event:
    return Event(author="agent", invocation_id="i", content=types.Content(role="model", parts=[types.Part(text=text)]))


@pytest.fixture
def rendered(monkeypatch) -> list[int]:
    """The sessions whose rows were rendered for a push."""
    sessions: list[int] = []
    render_rows = broadcast.render_rows

    def counting(session, views):
        sessions.append(session.pk)
        return render_rows(session, views)

    monkeypatch.setattr(broadcast, "render_rows", counting)
    return sessions


def test_an_append_nobody_watches_renders_nothing(layer, service, rendered):
    adk = service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    service.append_event_sync(adk, said("unwatched"))
    assert rendered == []


def test_an_append_a_viewer_watches_reaches_it(layer, service, rendered):
    adk = service.create_session_sync(app_name=APP, user_id="u", session_id="s")
    pk = Session.objects.get(session_id="s").pk
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(session_group(pk), channel)
    service.append_event_sync(adk, said("watched"))
    message = async_to_sync(layer.receive)(channel)
    assert rendered == [pk]
    assert message["type"] == "event.appended" and "watched" in message["html"]
    async_to_sync(layer.group_discard)(session_group(pk), channel)
    service.append_event_sync(adk, said("left"))
    assert rendered == [pk]


@pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs REDIS_URL")
def test_deployments_sharing_one_redis_keep_their_groups_apart(settings, monkeypatch, service, rendered):
    """ADKUI_CHANNEL_PREFIX: a viewer of another deployment's session with the same pk is not ours."""
    configs = {}
    for name in ("default", "other"):
        monkeypatch.setenv("ADKUI_CHANNEL_PREFIX", f"adkui-test-{name}-{uuid.uuid4().hex}")
        configs[name] = redis_channel_layer(settings.REDIS_URL)
    settings.CHANNEL_LAYERS = configs
    channel_layers.backends.clear()
    try:
        adk = service.create_session_sync(app_name=APP, user_id="u", session_id="s")
        pk = Session.objects.get(session_id="s").pk
        other = get_channel_layer("other")
        channel = async_to_sync(other.new_channel)()
        async_to_sync(other.group_add)(session_group(pk), channel)
        service.append_event_sync(adk, said("ours"))
        assert rendered == []
        assert get_channel_layer().prefix == configs["default"]["CONFIG"]["prefix"] != other.prefix
        async_to_sync(other.group_discard)(session_group(pk), channel)
    finally:
        channel_layers.backends.clear()
