"""HTML fragments of the session page: older events, state as of an event, key history; and delete.
And the search across an app's sessions, whose hits open the session page at the event.

The pages themselves (home, app, session) show the agent beside its sessions,
so they live in runtime_app, which composes this app's fragments."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.middleware import HtmxDetails

from access.roles import deletes

from . import runtime, search, selectors, services, timeline
from .keys import SessionKey
from .models import Session
from .scopes import split_key

KEY_HISTORY_PAGE = 50  # changes a page of a key's history (as the other long lists page); "older changes" loads the next


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it (for type checkers)."""

    htmx: HtmxDetails


def session_or_404(pk: int) -> Session:
    session = selectors.session_for_page(pk)
    if session is None:
        raise Http404(f"No session #{pk}.")
    return session


@require_GET
def session_events(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """"Load older": the page of events before `?before=`, with the next button."""
    session = session_or_404(pk)
    before = int_or_404(request.GET.get("before"))
    views, has_older = timeline.page(session, before=before, filters=selectors.Filters.from_query(request.GET))
    context = {
        "session": session, "views": views, "has_older": has_older, "filter_query": timeline.filter_query(request.GET),
        "initial": selectors.initial_changes(session) if not has_older else [],
    }
    return render(request, "sessions_app/partials/event_page.html", context)


@require_GET
def session_state(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_or_404(pk)
    seq = int_or_404(request.GET.get("seq"))
    if seq is not None and not (0 <= seq <= session.revision):
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    return render(request, "sessions_app/partials/state_panel.html", {"session": session, **timeline.state_panel(session, seq)})


@require_GET
def key_history(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    full_key = request.GET.get("key", "")
    if not full_key:
        raise Http404("No key given.")
    before = request.GET.get("before")
    if before is not None and not (before.isascii() and before.isdigit() and len(before) <= 18):
        return HttpResponseBadRequest(f"before: not a change number ({before[:40]!r}).")
    scope, _ = split_key(full_key)
    changes = selectors.key_history(app=session.app, full_key=full_key, user_id=session.user_id, session=session)
    # Keyset by change number, newest first: "older changes" loads the next page after the last row shown.
    rows = list((changes.filter(id__lt=int(before)) if before else changes)[:KEY_HISTORY_PAGE + 1])
    rows, more = rows[:KEY_HISTORY_PAGE], len(rows) > KEY_HISTORY_PAGE
    context = {"session": session, "key": full_key, "scope": scope, "changes": rows, "before": before,
               "older": rows[-1].pk if more else None}
    template = "sessions_app/partials/key_history.html" + ("#rows" if before else "")
    return render(request, template, context)


@deletes
@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    if request.method == "GET":
        return render(request, "sessions_app/session_confirm_delete.html", {"session": session})
    services.session_delete(key=SessionKey(session.app.name, session.user_id, session.session_id))
    if request.htmx and request.htmx.target and request.htmx.target.startswith("session-row-"):
        return HttpResponse("")
    messages.success(request, f"Session {session.session_id} deleted.")
    return redirect("runtime:app_detail", app_name=session.app.name)


SEARCH_PAGE_SIZE = 20


@require_GET
def event_search(request: HtmxHttpRequest, app_name: str) -> HttpResponse:
    """Events of one app matching `?q=` (optionally one user's, `?user=`), a keyset page at a
    time from `?after=`; htmx requests aimed at the results get only the results, and "more
    results" (aimed at its own row) only the next hits."""
    app = selectors.app_by_name(app_name)
    if app is None and app_name not in runtime.agent_names():
        raise Http404(f"No app named {app_name!r}.")
    q, user_id = request.GET.get("q", "").strip(), request.GET.get("user", "").strip()
    after = request.GET.get("after") or None
    results, error = None, ""
    try:
        if q and app is None:  # an agent with nothing stored yet
            results = search.SearchResults([], 0, search.parse_query(q))
        elif q:
            results = search.search_events(app, q, user_id=user_id or None, limit=SEARCH_PAGE_SIZE, after=after)
    except search.QueryError as exc:
        error = f"The search {exc}"
    except ValueError:
        message = ("The 'after' parameter is not a position of this search: follow the page's own links, "
                   "or start again from the first page.")
        return render(request, "400.html", {"message": message}, status=400)
    context = {"app_name": app_name, "q": q, "user_filter": user_id, "results": results, "error": error,
               "after": after, "searched": bool(q)}
    if request.htmx and request.htmx.target == "search-more":
        return render(request, "sessions_app/partials/search_results.html#hits", context)
    partial = request.htmx and request.htmx.target == "search-results"
    template = "sessions_app/partials/search_results.html" if partial else "sessions_app/search.html"
    return render(request, template, context)


def int_or_404(value: str | None) -> int | None:
    """A number from the query or form; None when absent; a 404 when it is no number."""
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        raise Http404(f"Not a number: {value!r}") from None
