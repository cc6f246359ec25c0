"""Pages of a replay: start one from a session, compare it with its original turn by turn, stop it.

The comparison page polls itself (htmx, every second) while the replay runs
in this process, and stops polling once the answer says it has ended.
"""
from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from sessions_app.models import Session
from sessions_app.views import HtmxHttpRequest

from . import replay


async def replay_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a replay of session `pk` and go to its comparison page; 400 with the reason when it cannot run."""
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    session = await _session(pk)
    try:
        started = await replay.replay_start(session=session)
    except replay.ReplayError as exc:
        context = {"session": session, "error": str(exc)}
        return await sync_to_async(render)(request, "runtime_app/replay_error.html", context, status=400)
    url = reverse("runtime:replay_detail", args=[started.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


@require_GET
def replay_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Original and replay side by side, turn by turn; htmx polls get the turns section only."""
    session = _replay_session(pk)
    template = "runtime_app/replay_detail.html"
    if request.htmx:
        template += "#turns"
    return render(request, template, replay.comparison(session))


@require_POST
def replay_stop(request: HttpRequest, pk: int) -> HttpResponse:
    session = _replay_session(pk)
    replay.replay_stop(replay=session)
    url = reverse("runtime:replay_detail", args=[session.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


def _replay_session(pk: int) -> Session:
    session = get_object_or_404(Session.objects.select_related("app", "replay_of", "replay_of__app"), pk=pk)
    if session.replay_of is None:
        raise Http404(f"Session {session.session_id!r} is not a replay, or its original was deleted.")
    return session


@sync_to_async
def _session(pk: int) -> Session:
    return get_object_or_404(Session.objects.select_related("app"), pk=pk)
