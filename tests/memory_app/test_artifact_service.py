"""DjangoArtifactService against ADK 2.13's BaseArtifactService contract."""
from __future__ import annotations

import pytest
from google.adk.artifacts import InMemoryArtifactService
from google.adk.artifacts.base_artifact_service import ArtifactVersion as AdkArtifactVersion
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from memory_app.models import Artifact, ArtifactVersion
from memory_app.services import ArtifactTooLargeError

pytestmark = pytest.mark.django_db(transaction=True)

APP, USER, S1, S2 = "art_app", "ann", "s1", "s2"


def text(value: str) -> types.Part:
    return types.Part(text=value)


def blob(data: bytes, mime: str = "application/octet-stream") -> types.Part:
    return types.Part(inline_data=types.Blob(mime_type=mime, data=data))


async def save(service, filename: str, part: types.Part, session_id: str | None = S1, **kw) -> int:
    return await service.save_artifact(
        app_name=APP, user_id=USER, session_id=session_id, filename=filename, artifact=part, **kw
    )


async def test_versions_count_up_from_zero_per_name_and_scope(artifacts):
    assert [await save(artifacts, "a.txt", text(f"v{i}")) for i in range(3)] == [0, 1, 2]
    assert await save(artifacts, "b.txt", text("other")) == 0
    assert await save(artifacts, "a.txt", text("other session"), session_id=S2) == 0
    assert await artifacts.list_versions(app_name=APP, user_id=USER, session_id=S1, filename="a.txt") == [0, 1, 2]


async def test_it_loads_the_latest_or_a_given_version_and_none_for_unknown_ones(artifacts):
    await save(artifacts, "a.txt", text("first"))
    await save(artifacts, "a.txt", text("second"))
    load = lambda **kw: artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="a.txt", **kw)  # noqa: E731
    assert (await load()).text == "second"
    assert (await load(version=0)).text == "first"
    assert await load(version=2) is None
    assert await load(version=-1) is None
    assert await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="nope") is None
    assert await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S2, filename="a.txt") is None


async def test_inline_bytes_and_display_name_round_trip(artifacts, media_root):
    data = bytes(range(256)) * 10
    part = types.Part(inline_data=types.Blob(mime_type="image/png", data=data, display_name="pic.png"))
    await save(artifacts, "images/pic.png", part)
    loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="images/pic.png")
    assert loaded == part
    # The payload is a file under MEDIA_ROOT with a generated name, not the artifact's.
    stored = [p for p in media_root.rglob("*") if p.is_file()]
    assert len(stored) == 1 and stored[0].read_bytes() == data
    assert "pic" not in str(stored[0].relative_to(media_root))


async def test_dict_artifacts_in_camel_case_are_accepted(artifacts):
    await save(artifacts, "d.txt", {"inlineData": {"mimeType": "text/plain", "data": b"hi"}})
    loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="d.txt")
    assert loaded.inline_data.data == b"hi" and loaded.inline_data.mime_type == "text/plain"


async def test_user_prefixed_names_are_shared_by_the_users_sessions(artifacts):
    assert await save(artifacts, "user:profile.json", text("{}"), session_id=S1) == 0
    assert await save(artifacts, "user:profile.json", text('{"a": 1}'), session_id=S2) == 1
    await save(artifacts, "local.txt", text("only s1"), session_id=S1)
    loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S2, filename="user:profile.json")
    assert loaded.text == '{"a": 1}'
    assert await artifacts.list_artifact_keys(app_name=APP, user_id=USER, session_id=S1) == ["local.txt", "user:profile.json"]
    assert await artifacts.list_artifact_keys(app_name=APP, user_id=USER, session_id=S2) == ["user:profile.json"]
    # Not shared with another user, nor another app.
    assert await artifacts.list_artifact_keys(app_name=APP, user_id="bob", session_id=S1) == []
    assert await artifacts.list_artifact_keys(app_name="other_app", user_id=USER, session_id=S1) == []


async def test_no_session_means_the_user_scope_as_the_base_class_documents(artifacts):
    assert await save(artifacts, "shared.txt", text("x"), session_id=None) == 0
    assert await save(artifacts, "user:shared.txt", text("y"), session_id=S1) == 1
    assert await artifacts.list_artifact_keys(app_name=APP, user_id=USER) == ["user:shared.txt"]
    # The listed name loads verbatim, with or without a session.
    for session_id in (None, S2):
        loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=session_id, filename="user:shared.txt")
        assert loaded.text == "y"


async def test_delete_removes_every_version_and_the_next_save_starts_at_zero(artifacts, media_root):
    await save(artifacts, "a.txt", text("one"))
    await save(artifacts, "a.txt", text("two"))
    await save(artifacts, "keep.txt", text("kept"))
    await artifacts.delete_artifact(app_name=APP, user_id=USER, session_id=S1, filename="a.txt")
    assert await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="a.txt") is None
    assert await artifacts.list_versions(app_name=APP, user_id=USER, session_id=S1, filename="a.txt") == []
    assert await artifacts.list_artifact_keys(app_name=APP, user_id=USER, session_id=S1) == ["keep.txt"]
    assert len([p for p in media_root.rglob("*") if p.is_file()]) == 1  # the payloads went too
    assert await save(artifacts, "a.txt", text("again")) == 0
    # Deleting what does not exist is not an error.
    await artifacts.delete_artifact(app_name=APP, user_id=USER, session_id=S1, filename="never.txt")


async def test_version_metadata_lists_and_gets_each_version(artifacts):
    await save(artifacts, "a.txt", text("one"), custom_metadata={"by": "test"})
    await save(artifacts, "a.txt", blob(b"\x00\x01", "application/pdf"))
    kw = dict(app_name=APP, user_id=USER, session_id=S1, filename="a.txt")
    listed = await artifacts.list_artifact_versions(**kw)
    assert all(isinstance(v, AdkArtifactVersion) for v in listed)
    assert [(v.version, v.mime_type, v.custom_metadata) for v in listed] == [
        (0, "text/plain", {"by": "test"}), (1, "application/pdf", {})
    ]
    assert listed[0].create_time <= listed[1].create_time
    assert listed[1].canonical_uri == f"artifact://apps/{APP}/users/{USER}/sessions/{S1}/artifacts/a.txt/versions/1"
    assert (await artifacts.get_artifact_version(**kw)).version == 1
    assert (await artifacts.get_artifact_version(**kw, version=0)).custom_metadata == {"by": "test"}
    assert await artifacts.get_artifact_version(**kw, version=7) is None
    assert await artifacts.get_artifact_version(app_name=APP, user_id=USER, session_id=S1, filename="x") is None


async def test_a_user_scoped_uri_points_at_the_user_artifact(artifacts):
    await save(artifacts, "user:p.txt", text("x"))
    meta = await artifacts.get_artifact_version(app_name=APP, user_id=USER, session_id=S1, filename="user:p.txt")
    # The name keeps its `user:` prefix, as ADK's other services' URIs do (#29), and still resolves.
    assert meta.canonical_uri == f"artifact://apps/{APP}/users/{USER}/artifacts/user:p.txt/versions/0"
    await save(artifacts, "alias.txt", types.Part(file_data=types.FileData(file_uri=meta.canonical_uri)))
    loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="alias.txt")
    assert loaded.text == "x"


async def test_artifact_references_resolve_within_scope(artifacts):
    await save(artifacts, "real.txt", text("the content"))
    ref = types.Part(file_data=types.FileData(file_uri=f"artifact://apps/{APP}/users/{USER}/sessions/{S1}/artifacts/real.txt/versions/0"))
    await save(artifacts, "alias.txt", ref)
    loaded = await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="alias.txt")
    assert loaded.text == "the content"
    foreign = types.Part(file_data=types.FileData(file_uri=f"artifact://apps/{APP}/users/bob/sessions/{S1}/artifacts/real.txt/versions/0"))
    with pytest.raises(InputValidationError):
        await save(artifacts, "steal.txt", foreign)
    self_ref = types.Part(file_data=types.FileData(file_uri=f"artifact://apps/{APP}/users/{USER}/sessions/{S1}/artifacts/loop.txt/versions/0"))
    await save(artifacts, "loop.txt", self_ref)
    with pytest.raises(InputValidationError, match="depth"):
        await artifacts.load_artifact(app_name=APP, user_id=USER, session_id=S1, filename="loop.txt")


async def test_a_rewind_tombstone_loads_as_absent_but_keeps_its_version(artifacts):
    await save(artifacts, "a.txt", text("x"))
    await save(artifacts, "a.txt", blob(b"", "application/octet-stream"))
    kw = dict(app_name=APP, user_id=USER, session_id=S1, filename="a.txt")
    assert await artifacts.load_artifact(**kw) is None
    assert (await artifacts.load_artifact(**kw, version=0)).text == "x"
    assert await artifacts.list_versions(**kw) == [0, 1]


@pytest.mark.parametrize(
    "filename",
    ["../secret.txt", "a/../../b", "..", "/etc/passwd", "\\\\server\\share", "C:evil", "a\\..\\b", "", "user:", "bad\x00name"],
)
async def test_path_like_names_are_refused_and_nothing_is_written(artifacts, media_root, filename):
    with pytest.raises(InputValidationError):
        await save(artifacts, filename, text("x"))
    assert not await Artifact.objects.aexists()
    assert not media_root.exists() or not any(p.is_file() for p in media_root.rglob("*"))


async def test_bad_ids_are_refused_like_adk_does(artifacts):
    with pytest.raises(InputValidationError):
        await artifacts.save_artifact(app_name=APP, user_id="../x", session_id=S1, filename="a", artifact=text("x"))
    with pytest.raises(InputValidationError):
        await artifacts.list_artifact_keys(app_name=APP, user_id=USER, session_id="..")


async def test_oversized_payloads_are_refused_and_nothing_is_written(artifacts, media_root, settings):
    settings.ADKUI_MAX_ARTIFACT_BYTES = 10
    with pytest.raises(ArtifactTooLargeError, match="limit is 10 bytes"):
        await save(artifacts, "big.bin", blob(b"x" * 11))
    with pytest.raises(ArtifactTooLargeError):
        await save(artifacts, "big.txt", text("é" * 6))  # 12 bytes of UTF-8
    assert not await ArtifactVersion.objects.aexists()
    assert not media_root.exists() or not any(p.is_file() for p in media_root.rglob("*"))
    assert await save(artifacts, "ok.bin", blob(b"x" * 10)) == 0


async def test_a_part_with_no_content_is_refused(artifacts):
    with pytest.raises(InputValidationError):
        await save(artifacts, "empty", types.Part())
    with pytest.raises(InputValidationError):
        await save(artifacts, "nodata", types.Part(inline_data=types.Blob(mime_type="text/plain")))


async def test_it_behaves_like_adks_in_memory_service(artifacts):
    """The same calls on ADK's InMemoryArtifactService give the same answers."""
    theirs = InMemoryArtifactService()

    async def both(method: str, **kw):
        kw = {"app_name": APP, "user_id": USER, **kw}
        return await getattr(artifacts, method)(**kw), await getattr(theirs, method)(**kw)

    script = [
        ("save_artifact", dict(session_id=S1, filename="a.txt", artifact=text("1"))),
        ("save_artifact", dict(session_id=S1, filename="a.txt", artifact=blob(b"2", "image/png"))),
        ("save_artifact", dict(session_id=S2, filename="user:u.txt", artifact=text("u"))),
        ("save_artifact", dict(session_id=S1, filename="dir/b.md", artifact=text("b"))),
        ("load_artifact", dict(session_id=S1, filename="a.txt")),
        ("load_artifact", dict(session_id=S1, filename="a.txt", version=0)),
        ("load_artifact", dict(session_id=S1, filename="a.txt", version=5)),
        ("load_artifact", dict(session_id=S1, filename="user:u.txt")),
        ("list_artifact_keys", dict(session_id=S1)),
        ("list_artifact_keys", dict(session_id=S2)),
        ("list_versions", dict(session_id=S1, filename="a.txt")),
        ("delete_artifact", dict(session_id=S1, filename="a.txt")),
        ("list_artifact_keys", dict(session_id=S1)),
        ("save_artifact", dict(session_id=S1, filename="a.txt", artifact=text("3"))),
    ]
    for method, kw in script:
        ours, adks = await both(method, **kw)
        assert ours == adks, (method, kw)
    ours, adks = await both("list_artifact_versions", session_id=S1, filename="dir/b.md")
    assert [(v.version, v.mime_type, v.custom_metadata) for v in ours] == [(v.version, v.mime_type, v.custom_metadata) for v in adks]


def test_concurrent_saves_of_one_name_get_distinct_versions():
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from adkui.adk import DjangoArtifactService

    def save_one(i: int) -> int:
        try:
            return DjangoArtifactService().save_artifact_sync(
                app_name=APP, user_id=USER, session_id=S1, filename="race.txt", artifact=text(str(i))
            )
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        versions = sorted(pool.map(save_one, range(12)))
    assert versions == list(range(12))
