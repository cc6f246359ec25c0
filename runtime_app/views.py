"""Pages that show an agent beside its sessions, and the session page's agent controls.

The home page, an app's page (its agent and session browser) and the session
page compose the feature apps' fragments with the agent's chat. A chat message
starts the run as a task on the server's event loop and returns at once; every
event the run stores reaches the page through the session's websocket,
streamed chunks included, and the run's end updates the chat status the same way.
"""
from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect
from google.adk.errors import InvocationNotFoundError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.genai import types

from sessions_app import page_tokens, selectors, services, timeline
from sessions_app.forms import SessionCreateForm
from sessions_app.models import App, Event, Session
from sessions_app.views import HtmxHttpRequest, int_or_404, session_or_404

from . import agents, chat, graph, home, local_imports, runs
from . import services as runtime_services
from .chat import chat_context
from .forms import ChatForm
from .import_summary import ImportSourceError

SESSIONS_PER_PAGE = 25
SORTS = {
    "-updated": "-update_time", "updated": "update_time", "-events": "-revision", "events": "revision",
    "-errors": "-error_count", "-loops": "-tool_loop_count", "-tokens": "-total_tokens", "-cost": "-cost_usd",
    "-ttft": "-ttft_ms", "ttft": "ttft_ms",
}

@require_GET
def app_list(request: HtmxHttpRequest) -> HttpResponse:
    """The home dashboard: apps and their agents, sessions to look at, eval runs, the way into the demo."""
    show_eval = request.GET.get("eval") in ("1", "on", "true")  # eval runs' sandbox apps and sessions too
    return render(request, "runtime_app/app_list.html", home.dashboard(show_eval=show_eval) | _local_stores_context())


@require_GET
def local_stores(request: HtmxHttpRequest) -> HttpResponse:
    """The `adk web` stores of the agents folder and their imports (polled while one runs)."""
    return render(request, "runtime_app/partials/local_stores.html", _local_stores_context())


@require_POST
def local_import_start(request: HtmxHttpRequest) -> HttpResponse:
    try:
        local_imports.import_start(app_name=request.POST.get("app", ""), follow=request.POST.get("follow") == "1")
    except ImportSourceError as exc:
        return render(request, "runtime_app/partials/local_stores.html", _local_stores_context(str(exc)), status=400)
    return render(request, "runtime_app/partials/local_stores.html", _local_stores_context())


@require_POST
def local_import_stop(request: HtmxHttpRequest) -> HttpResponse:
    local_imports.import_stop(app_name=request.POST.get("app", ""))
    return render(request, "runtime_app/partials/local_stores.html", _local_stores_context())


def _local_stores_context(error: str = "") -> dict:
    jobs = local_imports.jobs()
    rows = [{"store": store, "job": jobs.get(store.app_name)} for store in local_imports.local_stores()]
    return {"stores": rows, "error": error, "busy": any(r["job"] and not r["job"].done for r in rows)}


@require_http_methods(["GET", "POST"])
def app_detail(request: HtmxHttpRequest, app_name: str) -> HttpResponse:
    app = selectors.app_by_name(app_name)
    is_agent = app_name in agents.agent_names()
    if app is None and not is_agent:
        raise Http404(f"No app named {app_name!r}.")
    form = SessionCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        session = _create_session(app_name, form)
        if session is not None:
            url = reverse("runtime:session_detail", args=[session.pk])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if request.method == "POST" and request.htmx:
        return render(request, "runtime_app/app_detail.html#create_form", {"form": form, "app_name": app_name})
    try:
        context = _app_context(request, app_name, app, is_agent, form)
    except BadPagePosition as exc:
        return render(request, "400.html", {"message": str(exc)}, status=400)
    return render(request, "runtime_app/app_detail.html", context)


def _create_session(app_name: str, form: SessionCreateForm) -> Session | None:
    try:
        return services.session_create(
            app_name=app_name,
            user_id=form.cleaned_data["user_id"],
            session_id=form.cleaned_data["session_id"] or None,
            state=form.cleaned_data["state"],
        )
    except AlreadyExistsError as exc:
        form.add_error("session_id", str(exc))
    except ValueError as exc:
        form.add_error(None, str(exc))
    return None


def _app_context(request: HtmxHttpRequest, app_name: str, app: App | None, is_agent: bool, form: SessionCreateForm) -> dict:
    user_id = request.GET.get("user", "").strip()
    search = request.GET.get("q", "").strip()
    sort = request.GET.get("sort", "-updated")
    sort = sort if sort in SORTS else "-updated"  # an unknown sort (an old or hand-made link): the default
    attention = request.GET.get("attention") in ("1", "on", "true")
    show_eval = request.GET.get("eval") in ("1", "on", "true")  # the sessions of the app's eval runs too
    sessions = selectors.session_browser(
        app=app, user_id=user_id, search=search, order=SORTS[sort], needing_attention=attention,
        sandboxes_of=app_name if show_eval else "",
    )
    page = selectors.session_browser_page(
        sessions, order=SORTS[sort], size=SESSIONS_PER_PAGE,
        after=_page_position(request, "after", sort), before=_page_position(request, "before", sort),
    )
    loaded = agents.load(app_name) if is_agent else None
    return {
        "app_name": app_name, "app": app, "agent": loaded, "form": form, "page": page,
        # A COUNT, not "25+": at 10 000 sessions on SQLite it took 0.4 ms for the whole app and 3 ms
        # with "needs attention" (`manage.py fill_scale 10000`, then `sessions.count()` timed), well
        # within the page's budget, and the total is what a person browsing wants to know.
        "count": sessions.count(),
        "newer_query": _page_query(request, "before", sort, page.previous),
        "older_query": _page_query(request, "after", sort, page.next),
        "user_filter": user_id, "search": search, "sort": sort, "attention": attention, "show_eval": show_eval,
        "users": selectors.user_ids(app) if app else [],
        "agent_graph": graph.app_svg(loaded),
        "live": app is not None and not (user_id or search or attention or show_eval) and sort == "-updated"
        and page.is_first,
    }


class BadPagePosition(ValueError):
    """A page link's position parameter that no page of this list wrote."""


def _page_position(request: HtmxHttpRequest, param: str, sort: str) -> selectors.BrowserPosition | None:
    """The position `?after=` or `?before=` names: a token of `_page_query`'s for the same sort."""
    token = request.GET.get(param)
    if token is None:
        return None
    try:
        token_sort, value, pk = page_tokens.decode(token)
        if token_sort != sort or isinstance(value, bool) or not isinstance(value, (int, float, type(None))) \
                or isinstance(pk, bool) or not isinstance(pk, int):
            raise ValueError(token)
    except ValueError as exc:
        raise BadPagePosition(f"The {param!r} parameter is not a position of this list sorted by {sort!r}: "
                              "follow the page's own links, or start again from the first page.") from exc
    return selectors.BrowserPosition(value, pk)


def _page_query(request: HtmxHttpRequest, param: str, sort: str, position: selectors.BrowserPosition | None) -> str:
    """The address of the page `param` (`after` or `before`) `position`, with the filters and sort
    of this one; empty when there is no such page."""
    if position is None:
        return ""
    query = request.GET.copy()
    for stale in ("after", "before", "page"):
        query.pop(stale, None)
    query[param] = page_tokens.encode([sort, *position])
    return query.urlencode()


@require_GET
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_or_404(pk)
    filters = selectors.Filters.from_query(request.GET)
    # The address holds the view (?at= selected event, ?key= open key history, filters), so a link restores it.
    at = int_or_404(request.GET.get("at"))
    if at is not None and not 0 <= at <= session.revision:
        raise Http404(f"Session {session.session_id!r} has no event #{at}.")
    shown = timeline.page_at(session, at, filters=filters)
    views, has_older = shown.views, shown.has_older
    context = {
        "session": session,
        "views": views,
        "has_older": has_older,
        "filters": filters,
        "kinds": selectors.KINDS,
        "filter_query": timeline.filter_query(request.GET),
        "at": at,
        "snapshot": shown.snapshot,
        "open_key": request.GET.get("key", ""),
        "last_seq": views[-1].seq if views and not shown.snapshot else session.revision,
        # authors on this page, not a scan of the whole session
        "authors": sorted({"user", *(v.row.author for v in views)} - {""}),
        "initial": selectors.initial_changes(session) if not has_older else [],
        **timeline.state_panel(session, at),
    }
    if request.htmx and request.htmx.target == "timeline-section":
        return render(request, "runtime_app/session_detail.html#timeline_section", context)
    context |= chat_context(session) | graph.session_context(session) | {"forks": selectors.forks(session)}
    return render(request, "runtime_app/session_detail.html", context)


async def chat_send(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    session = await _session(pk)
    form = ChatForm(request.POST)
    if not await sync_to_async(form.is_valid)():
        return await _chat_panel(request, session, form)
    # The options stay as the user set them, for every later render of the panel.
    await chat.aremember_options(request, form.options())
    fresh = ChatForm(initial=form.options())
    if form.state_only():  # a state change alone: no run of the agent
        try:
            await sync_to_async(runtime_services.session_state_update)(
                session=session, state_delta=form.cleaned_data["state_delta"])
        except (ValueError, SessionNotFoundError) as exc:  # a key too long, the session gone
            form.add_error("state_delta", str(exc))
            return await _chat_panel(request, session, form)
        return await _chat_panel(request, session, fresh)
    message = form.cleaned_data["message"]
    run_request = runs.RunRequest(
        key=session.key,
        new_message=types.Content(role="user", parts=[types.Part(text=message)]) if message else None,
        state_delta=form.cleaned_data["state_delta"] or None,
        invocation_id=request.POST.get("invocation_id") or None,
        streaming=form.cleaned_data["streaming"],
        max_llm_calls=form.cleaned_data["max_llm_calls"],
    )
    runtime_services.chat_start(session=session, request=run_request, keep_running=form.cleaned_data["keep_running"])
    await asyncio.sleep(0)  # let the run register, so the panel shows it running
    return await _chat_panel(request, session, fresh, running=True)


@require_POST
def chat_stop(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    asked = runs.stop_run(session.key)
    if options := chat.posted_options(request.POST):
        chat.remember_options(request, chat.remembered_options(request) | options)
    # No form here: the panel gets the remembered one (chat.remembered_chat_form).
    context = chat_context(session) | {"running": asked > 0, "stopping": asked > 0}
    return render(request, "runtime_app/partials/chat_panel.html", context)


@require_GET
def rewind_preview(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    event = _event(session, request.GET.get("seq"))
    preview = selectors.rewind_preview(session, event)
    preview["initial_cleared"] = selectors.rewind_clears_unevented(session, preview)
    return render(request, "runtime_app/partials/rewind_preview.html", {"session": session, "event": event, **preview})


async def rewind_apply(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    session = await _session(pk)
    invocation_id = request.POST.get("invocation_id", "")
    try:
        await runs.rewind(session.key, before_invocation_id=invocation_id)
    except (InvocationNotFoundError, ValueError) as exc:
        return render(request, "runtime_app/partials/rewind_done.html", {"error": str(exc)}, status=400)
    return render(request, "runtime_app/partials/rewind_done.html", {"invocation_id": invocation_id})


def _fork_seq(session: Session, value: str | None) -> int:
    seq = int_or_404(value)
    if seq is None or not 0 <= seq <= session.revision:
        raise Http404("No such event to fork from.")
    return seq


@require_GET
def fork_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """What a fork at an event would copy, asked in the page (as rewind asks) before it is made."""
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    seq = _fork_seq(session, request.GET.get("seq"))
    state = selectors.state_as_of(session, seq).session
    return render(request, "runtime_app/partials/fork_preview.html",
                  {"session": session, "seq": seq, "state": sorted(state.items())})


@require_POST
def session_fork(request: HttpRequest, pk: int) -> HttpResponse:
    """A new session of the same user continuing this one's history up to an event
    (see `sessions_app.services.session_fork` for what is copied)."""
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    seq = _fork_seq(session, request.POST.get("seq"))
    fork = runtime_services.session_fork(session=session, seq=seq)
    url = reverse("runtime:session_detail", args=[fork.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


@require_POST
def session_reset(request: HttpRequest, pk: int) -> HttpResponse:
    """"New chat": a fresh session for the same user; this one is offloaded to
    long-term memory when ADKUI_MEMORY_OFFLOAD includes "reset"."""
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    fresh = runtime_services.session_reset(session=session)
    url = reverse("runtime:session_detail", args=[fresh.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponse(status=303, headers={"Location": url})


async def _chat_panel(request: HttpRequest, session: Session, form: ChatForm, **extra: Any) -> HttpResponse:
    context = await sync_to_async(chat_context)(session, form)
    return await sync_to_async(render)(request, "runtime_app/partials/chat_panel.html", context | extra)


@sync_to_async
def _session(pk: int) -> Session:
    return get_object_or_404(Session.objects.select_related("app"), pk=pk)


def _event(session: Session, seq: str | None) -> Event:
    number = int_or_404(seq)
    event = selectors.event_at(session, number)
    if event is None:
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    return event
