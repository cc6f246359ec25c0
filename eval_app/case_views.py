"""HTML views for eval cases: editing, deleting, and adding one from a session."""
from __future__ import annotations

from django.contrib import messages
from django.forms import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from access.roles import deletes
from sessions_app.models import Session
from sessions_app.sandbox import real_app_name

from . import selectors, services
from .forms import AddSessionForm, CaseForm, TurnFormSet, case_initial, edited_case, state_text
from .models import EvalCase


@require_http_methods(["GET", "POST"])
def case_edit(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_object_or_404(EvalCase.objects.select_related("eval_set"), pk=pk)
    head_initial, turns_initial = case_initial(selectors.adk_eval_case(case))
    head = CaseForm(request.POST or None, initial=head_initial)
    turns = TurnFormSet(request.POST or None, initial=turns_initial, prefix="turn")
    if request.method == "POST" and head.is_valid() and turns.is_valid():
        try:
            data = edited_case(case.data, head.cleaned_data, [f.cleaned_data for f in turns.forms],
                               case.eval_set.app_name)
            services.eval_case_update(case=case, data=data)
        except ValidationError as exc:
            head.add_error(None, exc)
        except services.EvalError as exc:
            head.add_error("eval_id", str(exc))
        else:
            messages.success(request, f"Saved case {case.eval_id}.")
            return redirect("eval_app:eval_set_detail", pk=case.eval_set_id)
    status = 400 if request.method == "POST" else 200
    return render(request, "eval_app/case_edit.html", {"case": case, "head": head, "turns": turns}, status=status)


@deletes
@require_POST
def case_delete(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_object_or_404(EvalCase, pk=pk)
    services.eval_case_delete(case=case)
    messages.success(request, f"Deleted case {case.eval_id}.")
    return redirect("eval_app:eval_set_detail", pk=case.eval_set_id)


@require_http_methods(["GET", "POST"])
def add_session_form(request: HttpRequest, session_pk: int) -> HttpResponse:
    """A fragment for the session page: pick (or name) an eval set, and the
    session's invocations become a case there, with its real state as of its start.
    From an event (`?at=<seq>`): the invocations up to that event, with the state
    as of that event proposed as the expected final state, editable before saving."""
    session = get_object_or_404(Session.objects.select_related("app"), pk=session_pk)
    at = _event_seq(session, request.POST.get("at") if request.method == "POST" else request.GET.get("at"))
    app_name = real_app_name(session.app.name)
    initial = {"eval_id": selectors.default_eval_id(session, at), "new_eval_set_id": f"{app_name}_evals", "at": at}
    if at is not None:
        initial["final_session_state"] = state_text(selectors.proposed_final_state(session, at))
    form = AddSessionForm(request.POST or None, app_name=app_name, initial=initial,
                          auto_id="at_%s" if at is not None else "id_%s")
    if request.method == "POST" and form.is_valid():
        try:
            case = services.eval_case_add_from_session(
                session=session, eval_set=form.cleaned_data["eval_set"],
                new_eval_set_id=form.cleaned_data["new_eval_set_id"], eval_id=form.cleaned_data["eval_id"],
                at=at, final_session_state=form.cleaned_data["final_session_state"],
            )
        except services.EvalError as exc:
            form.add_error(None, str(exc))
        else:
            if not request.htmx:
                messages.success(request, f"Added case {case.eval_id} to {case.eval_set.eval_set_id}.")
                return redirect("eval_app:eval_set_detail", pk=case.eval_set_id)
            return render(request, "eval_app/partials/add_session_done.html", {"case": case})
    # htmx swaps only 2xx responses, so the fragment shows its errors with a 200.
    status = 400 if form.errors and not request.htmx else 200
    template = "eval_app/partials/add_session_form.html" if request.htmx else "eval_app/add_session_page.html"
    return render(request, template, {"form": form, "session": session, "at": at}, status=status)


def _event_seq(session: Session, value: str | None) -> int | None:
    """The event `?at=` names (None: the whole session); a 404 for no such event."""
    if value in (None, ""):
        return None
    try:
        seq = int(value)
    except ValueError:
        raise Http404(f"Not an event number: {value!r}") from None
    if not 1 <= seq <= session.revision:
        raise Http404(f"Session {session.session_id!r} has no event #{seq}.")
    return seq
