"""The session page's agent controls: chat, stop, resume, rewind and fork.

A chat message starts the run as a task on the server's event loop and
returns at once; every event the run stores reaches the page through the
session's websocket, streamed chunks included, and the run's end updates the
chat status the same way.
"""
from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect
from google.adk.errors._invocation_not_found_error import InvocationNotFoundError
from google.genai import types

from adkui import agents

from . import broadcast, runs, selectors, services
from .forms import ChatForm
from .models import Event, Session
from .services import SessionKey

_background: set[asyncio.Task[None]] = set()  # keeps running chats from being garbage-collected


def session_key(session: Session) -> SessionKey:
    return SessionKey(session.app.name, session.user_id, session.session_id)


def chat_context(session: Session, form: ChatForm | None = None) -> dict[str, Any]:
    key = session_key(session)
    loaded = agents.load(key.app_name) if key.app_name in agents.agent_names() else None
    return {
        "session": session,
        "chat_form": form or ChatForm(),
        "agent_error": None if loaded is None or loaded.ok else loaded.error,
        "has_agent": loaded is not None and loaded.ok,
        "running": bool(runs.running_invocations(key)),
        "unfinished": selectors.unfinished_invocation(session),
    }


async def chat_send(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    session = await _session(pk)
    form = ChatForm(request.POST)
    if not await sync_to_async(form.is_valid)():
        return await _chat_panel(request, session, form)
    invocation_id = request.POST.get("invocation_id") or None
    message = form.cleaned_data["message"]
    run_request = runs.RunRequest(
        key=session_key(session),
        new_message=types.Content(role="user", parts=[types.Part(text=message)]) if message else None,
        state_delta=form.cleaned_data["state_delta"] or None,
        invocation_id=invocation_id,
        streaming=form.cleaned_data["streaming"],
        max_llm_calls=form.cleaned_data["max_llm_calls"],
    )
    # A fresh context: the request's own (asgiref's per-request thread) ends
    # with the response, and the run goes on after it.
    task = asyncio.create_task(_run_chat(session, run_request), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    await asyncio.sleep(0)  # let the run register, so the panel shows it running
    return await _chat_panel(request, session, ChatForm(initial=form.cleaned_data | {"message": ""}), running=True)


async def _run_chat(session: Session, run_request: runs.RunRequest) -> None:
    run = runs.run_agent(run_request)
    async for _ in run:
        pass  # events reach the page through the session service's broadcasts
    await sync_to_async(broadcast.run_finished)(session=session, error=str(run.error) if run.error else None)


@require_POST
def chat_stop(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    asked = runs.stop_run(session_key(session))
    context = chat_context(session) | {"running": asked > 0, "stopping": asked > 0}
    return render(request, "sessions_app/partials/chat_panel.html", context)


@require_GET
def rewind_preview(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    event = _event(session, request.GET.get("seq"))
    preview = selectors.rewind_preview(session, event)
    return render(request, "sessions_app/partials/rewind_preview.html", {"session": session, "event": event, **preview})


async def rewind_apply(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    session = await _session(pk)
    invocation_id = request.POST.get("invocation_id", "")
    try:
        await runs.rewind(session_key(session), before_invocation_id=invocation_id)
    except (InvocationNotFoundError, ValueError) as exc:
        return render(request, "sessions_app/partials/rewind_done.html", {"error": str(exc)}, status=400)
    return render(request, "sessions_app/partials/rewind_done.html", {"invocation_id": invocation_id})


@require_POST
def session_fork(request: HttpRequest, pk: int) -> HttpResponse:
    """A new session of the same user whose session state is this one's as of an event.

    Only session-scoped keys are copied: `app:` and `user:` state is shared,
    and writing old values back would change it for every other session.
    """
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    seq = _int(request.POST.get("seq"))
    if seq is None or not 0 <= seq <= session.revision:
        raise Http404("No such event to fork from.")
    state = selectors.state_as_of(session, seq).session
    fork = services.session_create(app_name=session.app.name, user_id=session.user_id, state=state)
    url = reverse("sessions_app:session_detail", args=[fork.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


@require_POST
def session_reset(request: HttpRequest, pk: int) -> HttpResponse:
    """"New chat": a fresh session for the same user; this one is offloaded to
    long-term memory when ADKUI_MEMORY_OFFLOAD includes "reset"."""
    from memory_app.services import session_end

    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    session_end(session=session, reason="reset")
    fresh = services.session_create(app_name=session.app.name, user_id=session.user_id)
    url = reverse("sessions_app:session_detail", args=[fresh.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


async def _chat_panel(request: HttpRequest, session: Session, form: ChatForm, **extra: Any) -> HttpResponse:
    context = await sync_to_async(chat_context)(session, form)
    return await sync_to_async(render)(request, "sessions_app/partials/chat_panel.html", context | extra)


@sync_to_async
def _session(pk: int) -> Session:
    return get_object_or_404(Session.objects.select_related("app"), pk=pk)


def _event(session: Session, seq: str | None) -> Event:
    number = _int(seq)
    event = Event.objects.filter(session=session, seq=number).first() if number is not None else None
    if event is None:
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    return event


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None

