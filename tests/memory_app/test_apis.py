"""ADK's artifact and memory routes under /api/, with ADK's JSON (camelCase, no nulls)."""
from __future__ import annotations

import base64
import json

import pytest
from google.adk.artifacts.base_artifact_service import ArtifactVersion as AdkArtifactVersion
from google.genai import types

from adkui.adk import DjangoSessionService
from memory_app.models import Artifact, MemoryEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]

BASE = "/api/apps/api_app/users/ann/sessions/s1/artifacts"


def post(client, body: dict):
    return client.post(BASE, data=json.dumps(body), content_type="application/json")


def text_body(filename: str, value: str, **extra) -> dict:
    return {"filename": filename, "artifact": {"text": value}, **extra}


def test_save_returns_the_version_metadata_in_adks_json(client):
    response = post(client, text_body("dir/a.txt", "hello", customMetadata={"by": "api"}))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"version", "canonicalUri", "customMetadata", "createTime", "mimeType"}
    assert body["version"] == 0 and body["customMetadata"] == {"by": "api"} and body["mimeType"] == "text/plain"
    assert AdkArtifactVersion.model_validate(body).canonical_uri.endswith("/artifacts/dir/a.txt/versions/0")
    assert post(client, text_body("dir/a.txt", "again")).json()["version"] == 1


def test_list_load_and_versions_routes(client):
    post(client, text_body("dir/a.txt", "one"))
    data = base64.b64encode(b"\x89PNG").decode()
    post(client, {"filename": "dir/a.txt", "artifact": {"inlineData": {"mimeType": "image/png", "data": data}}})
    post(client, text_body("user:shared.txt", "u"))

    assert client.get(BASE).json() == ["dir/a.txt", "user:shared.txt"]
    latest = client.get(f"{BASE}/dir/a.txt").json()
    assert types.Part.model_validate(latest).inline_data.data == b"\x89PNG"
    assert "inlineData" in latest and "text" not in latest  # camelCase, nulls left out
    assert client.get(f"{BASE}/dir/a.txt?version=0").json() == {"text": "one"}
    assert client.get(f"{BASE}/dir/a.txt/versions/0").json() == {"text": "one"}
    assert client.get(f"{BASE}/dir/a.txt/versions/latest").json() == latest
    assert client.get(f"{BASE}/dir/a.txt/versions").json() == [0, 1]
    listed = client.get(f"{BASE}/dir/a.txt/versions/metadata").json()
    assert [(v["version"], v["mimeType"]) for v in listed] == [(0, "text/plain"), (1, "image/png")]
    assert client.get(f"{BASE}/dir/a.txt/versions/1/metadata").json()["mimeType"] == "image/png"
    assert client.get(f"{BASE}/dir/a.txt/versions/latest/metadata").json()["version"] == 1
    assert client.get(f"{BASE}/user:shared.txt").json() == {"text": "u"}


def test_unknown_artifacts_and_versions_are_404_and_bad_version_ids_422(client):
    post(client, text_body("a.txt", "one"))
    assert client.get(f"{BASE}/a.txt/versions/5").status_code == 404
    assert client.get(f"{BASE}/a.txt/versions/5").json() == {"detail": "Artifact not found"}
    assert client.get(f"{BASE}/a.txt/versions/5/metadata").status_code == 404
    assert client.get(f"{BASE}/nope.txt").status_code == 404
    assert client.get(f"{BASE}/a.txt/versions/abc").status_code == 422
    assert client.get(f"{BASE}/a.txt/versions/abc/metadata").status_code == 422
    assert client.get(f"{BASE}/a.txt?version=x").status_code == 422


def test_delete_removes_the_artifact(client):
    post(client, text_body("a.txt", "one"))
    response = client.delete(f"{BASE}/a.txt")
    assert response.status_code == 200 and response.json() is None
    assert client.get(f"{BASE}/a.txt").status_code == 404
    assert client.get(BASE).json() == []


@pytest.mark.parametrize("filename", ["../escape.txt", "a/../../b.txt", "/abs.txt"])
def test_path_traversal_is_a_400_and_nothing_is_written(client, media_root, filename):
    response = post(client, text_body(filename, "x"))
    assert response.status_code == 400 and "detail" in response.json()
    assert not Artifact.objects.exists()
    assert not media_root.exists() or not any(p.is_file() for p in media_root.rglob("*"))
    assert client.get(f"{BASE}/..%2F..%2Fsecret").status_code == 400


def test_oversized_saves_are_a_413_and_nothing_is_written(client, settings, media_root):
    settings.ADKUI_MAX_ARTIFACT_BYTES = 100
    response = post(client, text_body("big.txt", "x" * 101))
    assert response.status_code == 413 and "ADKUI_MAX_ARTIFACT_BYTES" in response.json()["detail"]
    huge = post(client, text_body("huge.txt", "x" * 100_000))  # refused before the body is read
    assert huge.status_code == 413
    assert not Artifact.objects.exists()


def test_large_saves_are_not_capped_by_djangos_upload_limit(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    data = base64.b64encode(b"z" * 5000).decode()
    response = post(client, {"filename": "big.bin", "artifact": {"inlineData": {"mimeType": "application/zip", "data": data}}})
    assert response.status_code == 200


def test_a_malformed_save_body_is_a_422(client):
    assert post(client, {"artifact": {"text": "no filename"}}).status_code == 422
    assert client.post(BASE, data="not json", content_type="application/json").status_code == 422


def test_patch_memory_adds_a_stored_session(client):
    sessions = DjangoSessionService()
    from google.adk.events.event import Event

    session = sessions.create_session_sync(app_name="api_app", user_id="ann", session_id="s1")
    sessions.append_event_sync(session, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="fig jam")])))
    url = "/api/apps/api_app/users/ann/memory"
    response = client.patch(url, data=json.dumps({"session_id": "s1"}), content_type="application/json")
    assert response.status_code == 200 and response.json() is None
    assert MemoryEvent.objects.filter(session_id="s1", search_text="fig jam").exists()
    again = client.patch(url, data=json.dumps({"sessionId": "s1"}), content_type="application/json")
    assert again.status_code == 200 and MemoryEvent.objects.count() == 1
    assert client.patch(url, data=json.dumps({"session_id": "nope"}), content_type="application/json").status_code == 404
    assert client.patch(url, data=json.dumps({}), content_type="application/json").status_code == 400


def test_a_nul_in_the_stored_part_is_a_400_naming_it_and_nothing_is_written(client):
    # PostgreSQL's jsonb cannot hold U+0000 (schemathesis found this as a 500).
    body = {"filename": "f.bin", "artifact": {"fileData": {"fileUri": "gs://b/\u0000x", "mimeType": "text/plain"}}}
    response = post(client, body)
    assert response.status_code == 400 and "artifact" in response.json()["detail"]
    assert not Artifact.objects.exists()
