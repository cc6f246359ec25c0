"""The Artifacts and Memory panels (htmx fragments for the session page) and the
conversation page. Each panel's forms post back to it and get the whole
fragment re-rendered, so a panel works on any page that loads it."""
from __future__ import annotations

import json
import mimetypes
import posixpath
from typing import Any, Optional

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from access.roles import deletes
from sessions_app import selectors as session_selectors
from sessions_app.models import Session

from . import conf, conversation, selectors, services
from .models import Artifact, ArtifactVersion, SessionMemory
from .naming import ArtifactKey, artifact_key
from .services import ArtifactTooLargeError

PREVIEW_BYTES = 64 * 1024
# Shown inline only as <img>; anything else (SVG and HTML above all) downloads.
INLINE_IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"}
SAFE_DOWNLOAD_TYPES = {"text/plain", "text/csv", "text/markdown", "application/json"}


def _session(pk: int) -> Session:
    return get_object_or_404(Session.objects.select_related("app"), pk=pk)


def session_link(pk: int) -> str:
    """The session page if the sessions app has one, else the conversation page."""
    try:
        return reverse("runtime:session_detail", args=[pk])
    except NoReverseMatch:
        return reverse("memory_app:conversation", args=[pk])


# ---- artifacts panel ----------------------------------------------------------


@require_GET
def artifacts_panel(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    return _artifacts(request, session, name=request.GET.get("name"), version=request.GET.get("version"))


@require_POST
def artifact_upload(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    upload = request.FILES.get("file")
    name = (request.POST.get("name") or "").strip() or (upload.name if upload else "")
    if request.POST.get("scope") == "user" and not name.startswith("user:"):
        name = "user:" + name
    if upload is None:
        return _artifacts(request, session, error="Choose a file to upload.", status=400)
    if upload.size > conf.max_artifact_bytes():
        error = f"{upload.name} is {upload.size} bytes; the limit is {conf.max_artifact_bytes()} bytes."
        return _artifacts(request, session, error=error, status=413)
    mime = upload.content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    part = types.Part(inline_data=types.Blob(mime_type=mime, data=upload.read(), display_name=upload.name))
    try:
        row = services.artifact_save(key=_key(session, name), part=part)
    except ArtifactTooLargeError as exc:
        return _artifacts(request, session, error=str(exc), status=413)
    except InputValidationError as exc:
        return _artifacts(request, session, error=str(exc), status=400)
    notice = f"Saved {row.artifact.key} version {row.version}."
    return _artifacts(request, session, name=row.artifact.key, version=str(row.version), notice=notice)


@deletes
@require_POST
def artifact_delete(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    name = request.POST.get("name", "")
    try:
        deleted = services.artifact_delete(key=_key(session, name))
    except InputValidationError as exc:
        return _artifacts(request, session, error=str(exc), status=400)
    notice = f"Deleted {name} and all its versions." if deleted else f"No artifact named {name}."
    return _artifacts(request, session, notice=notice)


@require_GET
def artifact_download(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    name, version = request.GET.get("name", ""), request.GET.get("version") or ""
    try:
        key = _key(session, name)
    except InputValidationError as exc:
        raise Http404(str(exc)) from exc
    if version and not version.isdigit():
        raise Http404("No such version.")
    part = selectors.artifact_load(key, int(version) if version else None)
    if part is None or (part.inline_data is None and part.text is None):
        raise Http404("No such artifact version, or its content is stored elsewhere.")
    data, mime = _bytes_of(part)
    inline = request.GET.get("inline") == "1" and mime in INLINE_IMAGE_TYPES
    response = HttpResponse(data, content_type=mime if inline else _download_type(mime))
    response["Content-Disposition"] = content_disposition_header(not inline, posixpath.basename(key.filename) or "artifact")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'; img-src 'self'"
    return response


def _download_type(mime: str) -> str:
    # Types a browser could run (HTML, SVG, JS) are sent as plain bytes.
    safe = mime in INLINE_IMAGE_TYPES or mime.split(";")[0] in SAFE_DOWNLOAD_TYPES
    return mime if safe else "application/octet-stream"


def _bytes_of(part: types.Part) -> tuple[bytes, str]:
    if part.inline_data is not None:
        return part.inline_data.data or b"", part.inline_data.mime_type or "application/octet-stream"
    return (part.text or "").encode("utf-8"), "text/plain; charset=utf-8"


def _key(session: Session, name: str) -> ArtifactKey:
    """An artifact this session can read: its own, or its user's (`user:`)."""
    return artifact_key(app_name=session.app.name, user_id=session.user_id, filename=name, session_id=session.session_id)


def _artifacts(
    request: HttpRequest,
    session: Session,
    *,
    name: Optional[str] = None,
    version: Optional[str] = None,
    notice: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    after = request.GET.get("after")
    try:
        page = selectors.session_artifact_page(session, size=selectors.ARTIFACTS_PAGE, token=after)
    except ValueError:
        message = ("The 'after' parameter is not a position of this list: follow the panel's own links, "
                   "or open the panel again.")
        return render(request, "400.html", {"message": message}, status=400)
    if request.htmx and after:  # "more artifacts": the next names, in place of the button
        context = {"session": session, "artifacts": page.rows, "more": page.next_token}
        return render(request, "memory_app/artifacts_panel.html#artifact_items", context)
    wanted = name or (page.rows[0].key if page.rows else None)
    selected = selectors.session_artifact(session, wanted) if wanted else None
    if selected is None and page.rows:  # a name it cannot read (or gone since): the first, as before
        selected = selectors.session_artifact(session, page.rows[0].key)
    chosen = _chosen_version(selected, version) if selected else None
    if selected and version and chosen is None:
        error = error or f"{selected.key} has no version {version}."
    context = {
        "session": session,
        "artifacts": page.rows,
        "more": page.next_token,
        "artifact_count": selectors.session_artifact_count(session),
        "selected": selected,
        "chosen": chosen,
        "preview": _preview(chosen) if chosen else None,
        "chosen_uri": selectors.canonical_uri(chosen) if chosen else "",
        "notice": notice,
        "error": error,
        "max_bytes": conf.max_artifact_bytes(),
    }
    return render(request, "memory_app/artifacts_panel.html", context, status=status)


def _chosen_version(artifact: Artifact, version: Optional[str]) -> ArtifactVersion | None:
    versions = list(artifact.versions.all())
    if not version:
        return versions[-1] if versions else None
    return next((v for v in versions if str(v.version) == version), None)


def _preview(row: ArtifactVersion) -> dict[str, Any]:
    """What the panel shows for one version: text, JSON, an image, or a summary."""
    if row.kind == ArtifactVersion.KIND_FILE:
        return {"kind": "reference", "uri": row.file_uri}
    mime = row.mime_type or ""
    if row.kind == ArtifactVersion.KIND_INLINE and row.size == 0 and mime == "application/octet-stream":
        return {"kind": "tombstone"}  # what a session rewind saves: this version loads as absent
    if mime in INLINE_IMAGE_TYPES:
        return {"kind": "image"}
    looks_textual = row.kind == ArtifactVersion.KIND_TEXT or mime.startswith("text/") or "json" in mime
    if not looks_textual and not row.artifact.filename.endswith((".json", ".md", ".txt", ".csv")):
        return {"kind": "binary"}
    data = selectors.artifact_payload(row) or b""
    text = data[:PREVIEW_BYTES].decode("utf-8", errors="replace")
    if "json" in mime or row.artifact.filename.endswith(".json"):
        try:
            return {"kind": "json", "text": json.dumps(json.loads(data), indent=2, ensure_ascii=False)}
        except ValueError:
            pass
    return {"kind": "text", "text": text, "truncated": len(data) > PREVIEW_BYTES}


# ---- memory panel -------------------------------------------------------------


@require_GET
def memory_panel(request: HttpRequest, pk: int) -> HttpResponse:
    return _memory(request, _session(pk), query=request.GET.get("q", ""))


@require_POST
def memory_add_session(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    count = services.session_offload(session=session, reason=SessionMemory.REASON_MANUAL)
    notice = f"Added this session to memory ({count} message{'s' if count != 1 else ''} with text)."
    return _memory(request, session, query=request.POST.get("q", ""), notice=notice)


@deletes
@require_POST
def memory_forget(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    forgotten = services.memory_forget(
        app_name=session.app.name, user_id=session.user_id, memory_id=request.POST.get("memory_id")
    )
    notice = "Forgotten." if forgotten else "That memory was already gone."
    return _memory(request, session, query=request.POST.get("q", ""), notice=notice)


def _memory(request: HttpRequest, session: Session, *, query: str, notice: str = "") -> HttpResponse:
    app_name, user_id = session.app.name, session.user_id
    found = selectors.memory_search(app_name=app_name, user_id=user_id, query=query) if query.strip() else []
    offload = selectors.session_memory(session)
    context = {
        "session": session,
        "query": query,
        "results": [
            {"memory": row, "score": score, "link": session_link(row.source_session_id) if row.source_session_id else ""}
            for row, score in found
        ],
        "offload": offload,
        "offload_stale": offload is not None and offload.revision < session.revision,
        "memory_total": selectors.memory_count(app_name=app_name, user_id=user_id),
        "triggers": sorted(conf.memory_offload_triggers()),
        "idle_minutes": int(conf.memory_idle_seconds() // 60),
        "notice": notice,
    }
    return render(request, "memory_app/memory_panel.html", context)


# ---- conversation page --------------------------------------------------------


@require_GET
def conversation_page(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(pk)
    rows = session_selectors.event_page(session)
    events = [event for _, event in rows]
    agents = conversation.agent_names(events)
    # The agent that spoke last is the one whose next request matters most.
    agent = request.GET.get("agent") if request.GET.get("agent") in agents else (agents[0] if agents else "")
    history = conversation.history(rows)
    context = {
        "session": session,
        "session_url": session_link(session.pk),
        "history": history,
        "model": conversation.model_view(events, agent_name=agent, branch=conversation.branch_of(events, agent)),
        "agents": agents,
        "agent": agent,
        "compactions": sum(1 for m in history.messages if m.role == conversation.SUMMARY),
        "last_prompt_tokens": conversation.last_prompt_tokens(events),
    }
    return render(request, "memory_app/conversation.html", context)
