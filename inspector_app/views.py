"""HTML views: the inspector (fragments for the session page's side panel, or
whole pages without htmx), an invocation's trace page and the session totals."""
from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from sessions_app import selectors as session_selectors
from sessions_app.models import Session

from . import inspection, selectors, trace
from .models import ModelCall, ToolCall

RECENT_INVOCATIONS = 20  # shown in the session header; totals count them all


def header_context(session: Session) -> dict[str, Any]:
    """What `inspector_app/partials/session_totals.html` needs, for the session page's context."""
    return {"inspector_totals": selectors.session_totals(session, recent=RECENT_INVOCATIONS)}


@require_GET
def session_totals(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=pk)
    return render(request, "inspector_app/partials/session_totals.html", {"session": session, **header_context(session)})


@require_GET
def event_inspector(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    event = session_selectors.event_at(session, seq)
    if event is None:
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    records = selectors.event_records(session, event)
    context: dict[str, Any] = {"session": session, "event": event, "records": records}
    if records.model_calls:
        context |= _model_call_context(records.model_calls[0], "request")
    return _render(request, "inspector_app/partials/event_inspector.html", context)


@require_GET
def model_call(request: HttpRequest, pk: int) -> HttpResponse:
    call = get_object_or_404(ModelCall.objects.select_related("session__app"), pk=pk)
    tab = request.GET.get("tab", "request")
    if tab not in inspection.TABS:
        tab = "request"
    return _render(request, "inspector_app/partials/model_call.html", _model_call_context(call, tab))


@require_GET
def tool_call(request: HttpRequest, pk: int) -> HttpResponse:
    call = get_object_or_404(ToolCall.objects.select_related("session__app"), pk=pk)
    seqs = selectors.event_seqs(call.session, {call.event_id, call.call_event_id}) if call.session else {}
    context = {"tool": call, "session": call.session, "event_seq": seqs.get(call.event_id),
               "call_event_seq": seqs.get(call.call_event_id)}
    return _render(request, "inspector_app/partials/tool_call.html", context)


@require_GET
def invocation_trace(request: HttpRequest, pk: int, invocation_id: str) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("app"), pk=pk)
    found = trace.invocation_trace(session, invocation_id)
    if found.empty and not session_selectors.invocation_exists(session=session, invocation_id=invocation_id):
        raise Http404(f"Session {session.session_id!r} has no invocation {invocation_id!r}.")
    totals = next(iter(selectors.invocation_totals(session, [invocation_id])), None)
    context = {"session": session, "trace": found, "totals": totals}
    template = "inspector_app/trace.html"
    if getattr(request, "htmx", False):
        template += "#trace"
    return render(request, template, context)


def _model_call_context(call: ModelCall, tab: str) -> dict[str, Any]:
    context: dict[str, Any] = {"call": call, "tab": tab, "tabs": inspection.TABS, "session": call.session}
    if tab == "request":
        context |= {"instruction": inspection.instruction(call), "placeholders": inspection.placeholders(call),
                    "templates": inspection.templates(call)}
    elif tab == "contents":
        context["contents"] = inspection.contents(call)
    elif tab == "tools":
        context["tools"] = inspection.tools(call)
    elif tab == "response":
        context["parts"] = inspection.response_parts(call)
    elif tab == "diff":
        previous = selectors.previous_model_call(call)
        context |= {"previous": previous, "diff": inspection.request_diff(previous, call) if previous else []}
    return context


def _render(request: HttpRequest, fragment: str, context: dict[str, Any]) -> HttpResponse:
    """The fragment for htmx; else the same fragment on a page of its own."""
    if getattr(request, "htmx", False):
        return render(request, fragment, context)
    return render(request, "inspector_app/page.html", context | {"fragment": fragment})
