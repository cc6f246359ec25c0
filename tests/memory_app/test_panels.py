"""The Artifacts and Memory panels and the conversation page, through Django's test client."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from google.adk.events.event import Event
from google.genai import types

from adkui.adk import DjangoArtifactService, DjangoMemoryService, DjangoSessionService
from memory_app.models import ArtifactVersion, MemoryEvent, SessionMemory
from sessions_app.models import Session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]

APP, USER = "panel_app", "ann"
XSS = "<script>alert('x')</script>"


@pytest.fixture
def session() -> Session:
    sessions = DjangoSessionService()
    adk = sessions.create_session_sync(app_name=APP, user_id=USER, session_id="s1")
    for text in ["I like hiking in the Alps", f"agent text {XSS}"]:
        author = "user" if "hiking" in text else "bot"
        content = types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)])
        sessions.append_event_sync(adk, Event(author=author, content=content))
    return Session.objects.select_related("app").get(session_id="s1")


def save(filename: str, part: types.Part, session_id: str = "s1") -> int:
    return DjangoArtifactService().save_artifact_sync(
        app_name=APP, user_id=USER, session_id=session_id, filename=filename, artifact=part
    )


def url(name: str, session: Session) -> str:
    return reverse(f"memory_app:{name}", args=[session.pk])


# ---- artifacts ----------------------------------------------------------------


def test_the_panel_lists_session_and_user_artifacts_with_the_latest_version(client, session):
    save("report.txt", types.Part(text="first"))
    save("report.txt", types.Part(text="second"))
    save("user:prefs.json", types.Part(text='{"tea": "green"}'))
    save("elsewhere.txt", types.Part(text="other session"), session_id="s2")
    html = client.get(url("artifacts_panel", session), HTTP_HX_REQUEST="true").content.decode()
    assert "report.txt" in html and "user:prefs.json" in html and "elsewhere.txt" not in html
    assert "<option value=\"1\" selected>v1 (latest)</option>" in html
    assert "second" in html and 'data-preview="text"' in html


def test_the_version_picker_shows_an_older_version_or_a_clear_error(client, session):
    save("report.txt", types.Part(text="first"))
    save("report.txt", types.Part(text="second"))
    html = client.get(url("artifacts_panel", session), {"name": "report.txt", "version": "0"}).content.decode()
    assert "first" in html and "<option value=\"0\" selected>" in html
    html = client.get(url("artifacts_panel", session), {"name": "report.txt", "version": "9"}).content.decode()
    assert "has no version 9" in html


def test_json_is_pretty_printed_and_images_are_shown_inline(client, session):
    save("user:prefs.json", types.Part(text='{"b":1,"a":[1,2]}'))
    html = client.get(url("artifacts_panel", session), {"name": "user:prefs.json"}).content.decode()
    assert 'data-preview="json"' in html and '&quot;a&quot;: [\n    1,' in html
    save("pic.png", types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG")))
    html = client.get(url("artifacts_panel", session), {"name": "pic.png"}).content.decode()
    assert 'data-preview="image"' in html and "inline=1" in html


def test_a_version_removed_by_a_rewind_says_so(client, session):
    save("draft.txt", types.Part(text="kept"))
    save("draft.txt", types.Part(inline_data=types.Blob(mime_type="application/octet-stream", data=b"")))
    html = client.get(url("artifacts_panel", session), {"name": "draft.txt"}).content.decode()
    assert "Removed by a session rewind" in html


def test_agent_supplied_text_is_escaped(client, session):
    save("x.txt", types.Part(text=XSS))
    html = client.get(url("artifacts_panel", session)).content.decode()
    assert XSS not in html and "&lt;script&gt;" in html


def test_upload_saves_a_new_version_in_the_chosen_scope(client, session):
    upload = SimpleUploadedFile("notes.txt", b"hello", content_type="text/plain")
    response = client.post(url("artifact_upload", session), {"file": upload, "name": "", "scope": "session"})
    assert response.status_code == 200 and "Saved notes.txt version 0" in response.content.decode()
    shared = SimpleUploadedFile("notes.txt", b"for all", content_type="text/plain")
    response = client.post(url("artifact_upload", session), {"file": shared, "name": "shared.txt", "scope": "user"})
    assert "Saved user:shared.txt version 0" in response.content.decode()
    loaded = DjangoArtifactService().load_artifact_sync(app_name=APP, user_id=USER, session_id="other", filename="user:shared.txt")
    assert loaded.inline_data.data == b"for all" and loaded.inline_data.display_name == "notes.txt"


def test_bad_uploads_get_a_clear_error_and_write_nothing(client, session, settings, media_root):
    bad_name = SimpleUploadedFile("x.txt", b"x", content_type="text/plain")
    response = client.post(url("artifact_upload", session), {"file": bad_name, "name": "../../etc/passwd"})
    assert response.status_code == 400 and "path traversal" in response.content.decode()
    settings.ADKUI_MAX_ARTIFACT_BYTES = 4
    big = SimpleUploadedFile("big.bin", b"12345", content_type="application/octet-stream")
    response = client.post(url("artifact_upload", session), {"file": big})
    assert response.status_code == 413 and "the limit is 4 bytes" in response.content.decode()
    assert client.post(url("artifact_upload", session), {}).status_code == 400
    assert not ArtifactVersion.objects.exists()
    assert not media_root.exists() or not any(p.is_file() for p in media_root.rglob("*"))


def test_delete_removes_all_versions(client, session):
    save("gone.txt", types.Part(text="a"))
    save("gone.txt", types.Part(text="b"))
    html = client.post(url("artifact_delete", session), {"name": "gone.txt"}).content.decode()
    assert "Deleted gone.txt" in html and "No artifacts yet" in html


def test_download_is_an_attachment_and_only_safe_images_show_inline(client, session):
    save("dir/report.txt", types.Part(text="body"))
    save("evil.svg", types.Part(inline_data=types.Blob(mime_type="image/svg+xml", data=b"<svg onload=alert(1)>")))
    save("pic.png", types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG")))
    download = url("artifact_download", session)
    response = client.get(download, {"name": "dir/report.txt", "version": "0"})
    assert response.content == b"body"
    assert response["Content-Disposition"].startswith('attachment; filename="report.txt"')
    assert response["X-Content-Type-Options"] == "nosniff"
    svg = client.get(download, {"name": "evil.svg", "inline": "1"})
    assert svg["Content-Disposition"].startswith("attachment") and svg["Content-Type"] == "application/octet-stream"
    png = client.get(download, {"name": "pic.png", "inline": "1"})
    assert png["Content-Type"] == "image/png" and png["Content-Disposition"].startswith("inline")
    assert client.get(download, {"name": "nope.txt"}).status_code == 404
    assert client.get(download, {"name": "dir/report.txt", "version": "7"}).status_code == 404
    assert client.get(download, {"name": "../x"}).status_code == 404


# ---- memory -------------------------------------------------------------------


def test_add_this_session_to_memory_then_search_it(client, session):
    html = client.get(url("memory_panel", session)).content.decode()
    assert "not in memory yet" in html and "Add this session to memory" in html
    html = client.post(url("memory_add_session", session)).content.decode()
    assert "Added this session to memory (2 messages with text)" in html and "In memory up to event #2" in html
    assert SessionMemory.objects.get(session=session).reason == "manual"
    html = client.get(url("memory_panel", session), {"q": "hiking alps"}).content.decode()
    assert "I like hiking in the Alps" in html
    assert f'href="{reverse("memory_app:conversation", args=[session.pk])}"' in html or f"/{session.pk}" in html
    assert XSS not in client.get(url("memory_panel", session), {"q": "agent text"}).content.decode()


def test_memory_search_is_scoped_to_the_sessions_user(client, session):
    other = Event(author="user", content=types.Content(role="user", parts=[types.Part(text="bob hiking secret")]))
    DjangoMemoryService().add_events_to_memory_sync(app_name=APP, user_id="bob", session_id="b1", events=[other])
    html = client.get(url("memory_panel", session), {"q": "hiking"}).content.decode()
    assert "bob hiking secret" not in html and "No memories match" in html


def test_forget_hides_a_memory(client, session):
    client.post(url("memory_add_session", session))
    row = MemoryEvent.objects.get(search_text__contains="hiking")
    html = client.post(url("memory_forget", session), {"memory_id": row.pk, "q": "hiking"}).content.decode()
    assert "Forgotten." in html and "No memories match" in html


def test_the_stale_badge_shows_when_newer_events_exist(client, session):
    client.post(url("memory_add_session", session))
    sessions = DjangoSessionService()
    adk = sessions.get_session_sync(app_name=APP, user_id=USER, session_id="s1")
    sessions.append_event_sync(adk, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="more")])))
    html = client.get(url("memory_panel", session)).content.decode()
    assert "newer events not in memory" in html and "Update this session in memory" in html


def test_unknown_sessions_are_404(client):
    for name in ("artifacts_panel", "memory_panel", "conversation"):
        assert client.get(reverse(f"memory_app:{name}", args=[999999])).status_code == 404


def test_the_conversation_page_renders_and_escapes(client, session):
    html = client.get(url("conversation", session)).content.decode()
    assert "Conversation" in html and "I like hiking in the Alps" in html
    assert XSS not in html and "&lt;script&gt;" in html
    assert "memory_app/memory.css" in html
