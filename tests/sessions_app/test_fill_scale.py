"""`manage.py fill_scale`: generated sessions written through the write path (#27)."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from adkui.adk import DjangoSessionService
from sessions_app.models import Event, Session, StateChange

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bulk", [[], ["--bulk"]])
def test_it_adds_sessions_with_events_and_state_in_every_scope_and_adds_more_when_run_again(bulk):
    call_command("fill_scale", "6", "--app", "big", "--events", "3", "--per-user", "2", *bulk, stdout=io.StringIO())
    assert Session.objects.filter(app__name="big").count() == 6
    assert Event.objects.filter(session__app__name="big").count() == 18
    assert set(StateChange.objects.filter(app__name="big").values_list("scope", flat=True)) == {"app", "user", "session"}
    session = DjangoSessionService().get_session_sync(app_name="big", user_id="user-00001", session_id="s-0000001")
    assert session.state["step"] == 2 and session.state["app:appends"] == 502  # the app's newest: session 5's
    assert [e.id for e in session.events] == ["e-1-0", "e-1-1", "e-1-2"]
    call_command("fill_scale", "4", "--app", "big", "--events", "1", *bulk, stdout=io.StringIO())
    assert Session.objects.filter(app__name="big").count() == 10
    assert Session.objects.filter(app__name="big", error_count__gt=0).count() == 1  # s-0000007 ends in an error


@pytest.mark.parametrize("args", [["0"], ["5", "--events", "0"], ["5", "--per-user", "-1"]])
def test_it_refuses_counts_below_one_and_writes_nothing(args):
    with pytest.raises(CommandError, match="at least 1"):
        call_command("fill_scale", *args, stdout=io.StringIO())
    assert not Session.objects.exists()
