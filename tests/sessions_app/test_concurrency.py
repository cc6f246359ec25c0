"""Several processes appending at once lose no event and no state update."""
from __future__ import annotations

import multiprocessing

import pytest

from sessions_app.models import Event as EventRow
from tests.workers import scoped_writer, database_url_for_children

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

APP, USER = "conc_app", "shared_user"


def run_writers(service, writers: int, appends: int) -> list[str]:
    ids = [
        service.create_session_sync(app_name=APP, user_id=USER, session_id=f"w{n}").id for n in range(writers)
    ]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=scoped_writer, args=(database_url_for_children(), APP, USER, n, ids[n], appends)) for n in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0
    return ids


@pytest.mark.parametrize("writers,appends", [(8, 200)])
def test_concurrent_writers_lose_no_update_and_no_event(service, writers, appends):
    ids = run_writers(service, writers, appends)
    written = {f"{n}-{i}" for n in range(writers) for i in range(appends)}
    for n, session_id in enumerate(ids):
        stored = service.get_session_sync(app_name=APP, user_id=USER, session_id=session_id)
        assert stored.state[f"user:w{n}"] == appends - 1
        assert stored.state[f"app:w{n}"] == appends - 1
        assert stored.state[f"mine{n}"] == appends - 1
        assert stored.state["user:last"] in written and stored.state["app:last"] in written
        seqs = list(EventRow.objects.filter(session__session_id=session_id).values_list("seq", flat=True))
        assert sorted(seqs) == list(range(1, appends + 1))
    assert EventRow.objects.count() == writers * appends
    assert EventRow.objects.values("event_id").distinct().count() == writers * appends


def test_two_writers_on_one_session_the_stale_one_is_refused(service):
    """Two processes' copies of one session: whoever appends second with an old copy gets StaleSessionError."""
    from google.adk.errors import StaleSessionError
    from google.adk.events.event import Event

    service.create_session_sync(app_name=APP, user_id=USER, session_id="shared")
    first = service.get_session_sync(app_name=APP, user_id=USER, session_id="shared")
    second = service.get_session_sync(app_name=APP, user_id=USER, session_id="shared")
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=scoped_writer, args=(database_url_for_children(), APP, USER, 0, "shared", 1))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 0
    for stale in (first, second):
        with pytest.raises(StaleSessionError):
            service.append_event_sync(stale, Event(author="late"))
    assert EventRow.objects.filter(session__session_id="shared").count() == 1
