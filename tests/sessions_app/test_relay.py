"""The relay's rules: a notice per relayed broadcast, written in the change's
own transaction, only where the channel layer stays in one process; read back
as the same call; ids that commit out of order are still read."""
from __future__ import annotations

import pytest
from channels.layers import channel_layers
from django.db import transaction

from sessions_app import relay
from sessions_app.models import Notice
from sessions_app.relay import GRACE_SECONDS, Seen

pytestmark = pytest.mark.django_db


def test_a_relayed_broadcast_leaves_a_notice_naming_the_call(own_layer, service):
    service.create_session_sync(app_name="relay_app", user_id="u", session_id="s")
    notice = Notice.objects.get()
    assert notice.origin == relay.ORIGIN
    assert notice.name == "sessions_app.broadcast.session_created"
    pk = notice.kwargs["session"]["pk"]
    assert notice.kwargs == {"session": {"$model": "sessions_app.Session", "pk": pk}}
    assert relay._decode(notice.kwargs)["session"].session_id == "s"


def test_a_rolled_back_change_leaves_no_notice(own_layer, service):
    with pytest.raises(RuntimeError), transaction.atomic():
        service.create_session_sync(app_name="relay_app", user_id="u", session_id="s")
        raise RuntimeError
    assert not Notice.objects.exists()


def test_a_notice_whose_row_is_gone_is_skipped(own_layer, service, monkeypatch):
    service.create_session_sync(app_name="relay_app", user_id="u", session_id="s")
    notice = Notice.objects.get()
    calls = []
    monkeypatch.setitem(relay._relayed, notice.name, lambda **kw: calls.append(kw))
    relay._run(notice.name, {"session": {"$model": "sessions_app.Session", "pk": 10**9}})
    assert calls == []
    relay._run(notice.name, notice.kwargs)
    assert [c["session"].session_id for c in calls] == ["s"]


def test_only_marked_broadcasts_are_relayed(own_layer, django_capture_on_commit_callbacks):
    calls = []
    with django_capture_on_commit_callbacks(execute=True):
        relay.on_commit(lambda **kw: calls.append(kw), session=None)
    assert calls == [{"session": None}]  # run here, on commit
    assert not Notice.objects.exists()  # and nowhere else


def test_no_notice_where_the_channel_layer_crosses_processes(settings, service):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": ["redis://127.0.0.1:6379/15"]}}}
    channel_layers.backends.clear()
    try:
        service.create_session_sync(app_name="relay_app", user_id="u", session_id="s")
    finally:
        channel_layers.backends.clear()
    assert not Notice.objects.exists()


def test_seen_reads_ids_that_commit_late_and_gives_up_on_rollbacks():
    seen = Seen(10)
    assert seen.add(12) and not seen.add(12) and not seen.add(9)
    seen.advance(now=100.0)
    assert seen.low == 10  # 11 may still commit
    assert seen.add(11)  # it did, late: read, once
    seen.advance(now=100.5)
    assert seen.low == 12 and seen.above == set()
    assert seen.add(14)
    seen.advance(now=200.0)
    assert seen.low == 12  # 13 is missing...
    seen.advance(now=200.0 + GRACE_SECONDS)
    assert seen.low == 14  # ...for longer than a commit takes: a rollback
    assert not seen.add(13)
