"""Artifact changes reach the open pages of every session that can read them."""
from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator
from google.genai import types

from adkui.asgi import application
from sessions_app.models import Session as SessionRow

pytestmark = pytest.mark.django_db(transaction=True)
APP = "live_artifacts_app"


async def connect(pk: int) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, f"/ws/sessions/{pk}/events/", headers=[(b"origin", b"http://localhost")])
    connected, code = await comm.connect(timeout=10)
    assert connected, code
    return comm


@pytest.fixture
async def two_sessions(service):
    for session_id in ("s1", "s2"):
        await service.create_session(app_name=APP, user_id="ann", session_id=session_id)
    await service.create_session(app_name=APP, user_id="bob", session_id="s3")
    pks = dict([row async for row in SessionRow.objects.values_list("session_id", "pk")])
    comms = [await connect(pks[s]) for s in ("s1", "s2", "s3")]
    yield comms
    for comm in comms:
        await comm.disconnect()


async def save(artifacts, filename: str, session_id: str = "s1") -> int:
    return await artifacts.save_artifact(app_name=APP, user_id="ann", session_id=session_id, filename=filename,
                                         artifact=types.Part(text="x"))


async def test_a_session_artifact_reaches_only_its_session(artifacts, two_sessions):
    s1, s2, s3 = two_sessions
    await save(artifacts, "notes.md")
    await save(artifacts, "notes.md")
    assert 'id="artifacts-live"' in await s1.receive_from(timeout=5)
    assert 'data-artifact="notes.md" data-version="1"' in await s1.receive_from(timeout=5)
    assert await s2.receive_nothing(timeout=0.2) and await s3.receive_nothing(timeout=0.2)


async def test_a_user_artifact_reaches_every_session_of_its_user(artifacts, two_sessions):
    s1, s2, s3 = two_sessions
    await save(artifacts, "user:prefs.json")
    for comm in (s1, s2):
        assert 'data-artifact="user:prefs.json" data-version="0"' in await comm.receive_from(timeout=5)
    assert await s3.receive_nothing(timeout=0.2)


async def test_a_deleted_artifact_is_pushed_with_no_version(artifacts, two_sessions):
    s1, _, _ = two_sessions
    await save(artifacts, "gone.txt")
    await s1.receive_from(timeout=5)
    await artifacts.delete_artifact(app_name=APP, user_id="ann", session_id="s1", filename="gone.txt")
    assert 'data-artifact="gone.txt" data-version=""' in await s1.receive_from(timeout=5)


async def test_a_save_that_fails_pushes_nothing(artifacts, two_sessions):
    s1, _, _ = two_sessions
    with pytest.raises(ValueError):
        await save(artifacts, "../escape.txt")
    assert await s1.receive_nothing(timeout=0.2)
