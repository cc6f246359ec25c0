"""HTML views: the session browser, the session page and its fragments."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails
from google.adk.errors.already_exists_error import AlreadyExistsError

from adkui import agents
from inspector_app import views as inspector_views

from . import run_views, selectors, services, timeline
from .forms import SessionCreateForm
from .models import App, Session
from .scopes import SCOPE_PREFIXES, split_key
from .services import SessionKey

SESSIONS_PER_PAGE = 25
SORTS = {"-updated": "-update_time", "updated": "update_time", "-events": "-revision", "events": "revision"}


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it (for type checkers)."""

    htmx: HtmxDetails


@require_GET
def app_list(request: HtmxHttpRequest) -> HttpResponse:
    stored = {app.name: app for app in App.objects.all()}
    names = sorted(set(stored) | set(agents.agent_names()))
    counts = selectors.session_counts()
    rows = [{"name": n, "app": stored.get(n), "sessions": counts.get(n, 0), "is_agent": n in agents.agent_names()}
            for n in names]
    return render(request, "sessions_app/app_list.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
def app_detail(request: HtmxHttpRequest, app_name: str) -> HttpResponse:
    app = App.objects.filter(name=app_name).first()
    is_agent = app_name in agents.agent_names()
    if app is None and not is_agent:
        raise Http404(f"No app named {app_name!r}.")
    form = SessionCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        session = _create_session(app_name, form)
        if session is not None:
            url = reverse("sessions_app:session_detail", args=[session.pk])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if request.method == "POST" and request.htmx:
        return render(request, "sessions_app/app_detail.html#create_form", {"form": form, "app_name": app_name})
    return render(request, "sessions_app/app_detail.html", _app_context(request, app_name, app, is_agent, form))


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
    sessions = Session.objects.filter(app=app) if app else Session.objects.none()
    if user_id:
        sessions = sessions.filter(user_id=user_id)
    if search:
        sessions = sessions.filter(session_id__icontains=search)
    sessions = sessions.order_by(SORTS.get(sort, "-update_time"), "-pk")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    loaded = agents.load(app_name) if is_agent else None
    return {
        "app_name": app_name, "app": app, "agent": loaded, "form": form, "page": page,
        "user_filter": user_id, "search": search, "sort": sort,
        "users": selectors.user_ids(app) if app else [],
        "live": app is not None and not (user_id or search) and sort == "-updated" and page.number == 1,
    }


@require_GET
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    filters = timeline.Filters.from_query(request.GET)
    at = _int(request.GET.get("at"))
    views, has_older = timeline.page(session, filters=filters, before=at + 1 if at is not None else None)
    context = {
        "session": session,
        "views": views,
        "has_older": has_older,
        "filters": filters,
        "kinds": timeline.KINDS,
        "filter_query": _filter_query(request),
        "at": at,
        "last_seq": views[-1].seq if views and at is None else session.revision,
        # authors on this page, not a scan of the whole session
        "authors": sorted({"user", *(v.row.author for v in views)} - {""}),
        "initial": selectors.initial_changes(session) if not has_older else [],
        **_state_context(session, at),
    }
    if request.htmx and request.htmx.target == "timeline-section":
        return render(request, "sessions_app/session_detail.html#timeline_section", context)
    context |= run_views.chat_context(session) | inspector_views.header_context(session)
    return render(request, "sessions_app/session_detail.html", context)


@require_GET
def session_events(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """"Load older": the page of events before `?before=`, with the next button."""
    session = get_object_or_404(Session, pk=pk)
    before = _int(request.GET.get("before"))
    views, has_older = timeline.page(session, before=before, filters=timeline.Filters.from_query(request.GET))
    context = {
        "session": session, "views": views, "has_older": has_older, "filter_query": _filter_query(request),
        "initial": selectors.initial_changes(session) if not has_older else [],
    }
    return render(request, "sessions_app/partials/event_page.html", context)


@require_GET
def session_state(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=pk)
    seq = _int(request.GET.get("seq"))
    if seq is not None and not (0 <= seq <= session.revision):
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    return render(request, "sessions_app/partials/state_panel.html", {"session": session, **_state_context(session, seq)})


def _state_context(session: Session, seq: int | None) -> dict:
    state = selectors.current_state(session) if seq is None else selectors.state_as_of(session, seq)
    changed = set()
    if seq is not None:
        changed = {SCOPE_PREFIXES[c.scope] + c.key for c in selectors.changes_of(session, seq)}
    rows = [
        {"scope": scope, "key": SCOPE_PREFIXES[scope] + key, "value": value, "changed": SCOPE_PREFIXES[scope] + key in changed}
        for scope, values in state.by_scope()
        for key, value in sorted(values.items())
    ]
    return {"state_rows": rows, "state_seq": seq}


@require_GET
def key_history(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    full_key = request.GET.get("key", "")
    if not full_key:
        raise Http404("No key given.")
    scope, _ = split_key(full_key)
    changes = selectors.key_history(app=session.app, full_key=full_key, user_id=session.user_id, session=session)[:200]
    return render(request, "sessions_app/partials/key_history.html",
                  {"session": session, "key": full_key, "scope": scope, "changes": changes})


@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    if request.method == "GET":
        return render(request, "sessions_app/session_confirm_delete.html", {"session": session})
    services.session_delete(key=SessionKey(session.app.name, session.user_id, session.session_id))
    if request.htmx and request.htmx.target and request.htmx.target.startswith("session-row-"):
        return HttpResponse("")
    messages.success(request, f"Session {session.session_id} deleted.")
    return redirect("sessions_app:app_detail", app_name=session.app.name)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        raise Http404(f"Not a number: {value!r}") from None


def _filter_query(request: HtmxHttpRequest) -> str:
    keep = {k: v for k, v in request.GET.items() if k in ("author", "invocation", "kind", "final_only") and v}
    return urlencode(keep)

