from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from django.urls import reverse

from memory_app.artifact_service import DjangoArtifactService
from runtime_app import local_imports
from runtime_app.adk_import import ImportSummary, import_source
from sessions_app import selectors
from sessions_app.models import Event, Session, StateChange

from .conftest import APP, adk_web_services, assert_same_as_source, run_turns

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _build_folder(agents: Path) -> SqliteSessionService:
    sessions, artifacts = adk_web_services(agents)

    async def build() -> None:
        await run_turns(sessions, user="ann", session_id="s1", messages=["plan a trip to Paris", "hello"],
                        state={"note": "from the form", "user:name": "Ann"})
        await run_turns(sessions, user="ann", session_id="s2", messages=["plan a trip to Oslo"])
        await run_turns(sessions, user="bob", session_id="  padded  ", messages=["weather in Kyoto"])
        for n in (1, 2):
            await artifacts.save_artifact(app_name=APP, user_id="ann", session_id="s1", filename="plan.txt",
                                          artifact=types.Part.from_text(text=f"plan v{n}"))
        await artifacts.save_artifact(app_name=APP, user_id="ann", session_id="s1", filename="user:avatar.png",
                                      artifact=types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"))

    asyncio.run(build())
    return SqliteSessionService(str(agents / APP / ".adk" / "session.db"))


def test_it_imports_an_adk_web_agents_folder_exactly(agents_dir: Path) -> None:
    source = _build_folder(agents_dir)
    call_command("import_adk", str(agents_dir))
    for user, sid in [("ann", "s1"), ("ann", "s2"), ("bob", "padded")]:  # ADK strips padded ids itself
        assert_same_as_source(source, app=APP, user=user, session_id=sid)
    artifacts = DjangoArtifactService()
    assert artifacts.list_versions_sync(app_name=APP, user_id="ann", session_id="s1", filename="plan.txt") == [0, 1]
    part = artifacts.load_artifact_sync(app_name=APP, user_id="ann", session_id="s1", filename="plan.txt", version=0)
    assert part.text == "plan v1"
    avatar = artifacts.load_artifact_sync(app_name=APP, user_id="ann", filename="user:avatar.png")
    assert avatar.inline_data.data == b"\x89PNG"


@pytest.mark.django_db(transaction=True)  # the job runs in a thread, on its own connection
def test_the_home_pages_import_job_imports_the_agents_store(agents_dir: Path, settings) -> None:
    source = _build_folder(agents_dir)
    settings.ADKUI_AGENTS_DIR = str(agents_dir)
    assert [store.app_name for store in local_imports.local_stores()] == [APP]
    job = local_imports.import_start(app_name=APP, follow=False)
    deadline = time.monotonic() + 120
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (job.done, job.error, job.summary.sessions_new) == (True, "", 3)
    assert_same_as_source(source, app=APP, user="ann", session_id="s1")


def test_initial_state_is_what_the_events_do_not_explain(agents_dir: Path) -> None:
    _build_folder(agents_dir)
    call_command("import_adk", str(agents_dir))
    s1 = Session.objects.get(session_id="s1")
    s2 = Session.objects.get(session_id="s2")
    assert s1.imported_from.endswith("agents")
    initial = {(c.scope, c.key): c.new_value for c in selectors.initial_changes(s1)}
    assert initial == {("session", "note"): "from the form", ("user", "name"): "Ann"}
    # user:name is shared: set once, not again for ann's second session.
    assert selectors.initial_changes(s2) == []
    assert s1.import_conflicts == [] and s2.import_conflicts == []


def test_a_second_import_adds_nothing(agents_dir: Path) -> None:
    _build_folder(agents_dir)
    first = import_source(str(agents_dir))
    counts = (Session.objects.count(), Event.objects.count(), StateChange.objects.count())
    second = import_source(str(agents_dir))
    assert (first.sessions_new, first.artifacts_new) == (3, 3) and first.events_new > 0
    assert (second.sessions_new, second.events_new, second.artifacts_new) == (0, 0, 0)
    # ann's `user:` artifact is seen from both her sessions.
    assert (second.sessions_existing, second.events_existing, second.artifacts_existing) == (
        3, first.events_new, 4)
    assert (Session.objects.count(), Event.objects.count(), StateChange.objects.count()) == counts


def test_follow_brings_events_appended_to_the_source_later(agents_dir: Path) -> None:
    source = _build_folder(agents_dir)
    sessions, _ = adk_web_services(agents_dir)

    def between_rounds(seconds: float) -> None:
        asyncio.run(run_turns(sessions, user="ann", session_id="s2", messages=["plan a trip to Lisbon"]))
        asyncio.run(run_turns(sessions, user="cid", session_id="new", messages=["hello"]))

    summary = import_source(str(agents_dir), follow=True, interval=0.01, max_rounds=2, sleep=between_rounds)
    assert summary.sessions_new == 4
    for user, sid in [("ann", "s1"), ("ann", "s2"), ("cid", "new")]:
        assert_same_as_source(source, app=APP, user=user, session_id=sid)


def test_a_session_that_fails_is_skipped_whole_and_reported(agents_dir: Path) -> None:
    source = _build_folder(agents_dir)
    sid_limits, sid_model = "too-long-author", "corrupt-json"

    async def corrupt() -> None:
        for sid in (sid_limits, sid_model):
            await run_turns(source, user="ann", session_id=sid, messages=["plan a trip to Paris"])
        session = await source.get_session(app_name=APP, user_id="ann", session_id=sid_limits)
        await source.append_event(session, AdkEvent(author="x" * 300, invocation_id="inv-long"))

    asyncio.run(corrupt())
    db = sqlite3.connect(agents_dir / APP / ".adk" / "session.db")  # a record ADK's Event model refuses
    db.execute("UPDATE events SET event_data = json_set(event_data, '$.author', json('[1]')) WHERE session_id = ?",
               (sid_model,))
    db.commit()
    db.close()
    summary = import_source(str(agents_dir))
    assert sorted(sid for sid, _ in summary.failed) == sorted([sid_limits, sid_model])
    assert not Session.objects.filter(session_id__in=[sid_limits, sid_model]).exists()
    assert not Event.objects.filter(invocation_id="inv-long").exists()
    assert summary.sessions_new == 3
    assert_same_as_source(source, app=APP, user="ann", session_id="s2")


def test_a_value_written_around_append_event_is_kept_and_flagged(agents_dir: Path) -> None:
    source = _build_folder(agents_dir)
    db = sqlite3.connect(agents_dir / APP / ".adk" / "session.db")
    db.execute("UPDATE sessions SET state = json_set(state, '$.destination', 'Rome') WHERE id = 's1'")
    db.commit()
    db.close()
    summary = import_source(str(agents_dir))
    assert ("s1", ["destination"]) in summary.conflicts
    assert_same_as_source(source, app=APP, user="ann", session_id="s1")
    s1 = Session.objects.get(session_id="s1")
    assert s1.import_conflicts == ["destination"]


def test_the_session_page_says_it_was_reconstructed(agents_dir: Path, client) -> None:
    _build_folder(agents_dir)
    db = sqlite3.connect(agents_dir / APP / ".adk" / "session.db")
    db.execute("UPDATE sessions SET state = json_set(state, '$.destination', 'Rome') WHERE id = 's1'")
    db.commit()
    db.close()
    import_source(str(agents_dir))
    s1 = Session.objects.get(session_id="s1")
    html = client.get(reverse("runtime:session_detail", args=[s1.pk])).content.decode()
    assert "reconstructed from" in html
    assert "destination" in html and "not explained by its events" in html


def test_a_database_session_service_url_is_imported(tmp_path: Path) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"

    async def build() -> None:
        service = DatabaseSessionService(url)
        await run_turns(service, user="ann", session_id="d1", messages=["plan a trip to Paris"], state={"k": 1})
        await service.close()

    asyncio.run(build())
    call_command("import_adk", url, "--app", APP)
    source = DatabaseSessionService(url)
    assert_same_as_source(source, app=APP, user="ann", session_id="d1")


@pytest.mark.parametrize("make", ["missing", "junk", "foreign_sqlite", "empty_dir", "url_without_app", "bad_scheme"])
def test_a_bad_source_is_an_error_and_writes_nothing(tmp_path: Path, make: str) -> None:
    foreign = tmp_path / "other.db"
    sqlite3.connect(foreign).execute("CREATE TABLE notes (x)").connection.commit()
    (tmp_path / "junk.db").write_text("not a database")
    (tmp_path / "empty").mkdir()
    source = {
        "missing": str(tmp_path / "nope"), "junk": str(tmp_path / "junk.db"), "foreign_sqlite": str(foreign),
        "empty_dir": str(tmp_path / "empty"), "url_without_app": f"sqlite+aiosqlite:///{foreign}",
        "bad_scheme": "mysql://localhost/x",
    }[make]
    before = foreign.read_bytes()
    with pytest.raises(CommandError, match="nope|junk|other|empty|--app|scheme"):
        call_command("import_adk", source, "--app", APP) if make not in ("url_without_app",) else \
            call_command("import_adk", source)
    assert Session.objects.count() == 0
    assert foreign.read_bytes() == before  # ADK's service did not create its tables in it


def test_the_command_exits_non_zero_on_a_bad_source(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "manage.py", "import_adk", str(tmp_path / "nope")], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "nope" in done.stderr
