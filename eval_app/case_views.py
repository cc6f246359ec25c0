"""HTML views for eval cases: editing, deleting, and adding one from a session."""
from __future__ import annotations

from django.contrib import messages
from django.forms import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from access.roles import deletes
from sessions_app.models import Session

from . import selectors, services
from .forms import AddSessionForm, CaseForm, TurnFormSet, case_initial, edited_case
from .models import EvalCase


@require_http_methods(["GET", "POST"])
def case_edit(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_object_or_404(EvalCase.objects.select_related("eval_set"), pk=pk)
    head_initial, turns_initial = case_initial(case.adk())
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
    session's invocations become a case there, with its real initial state."""
    session = get_object_or_404(Session.objects.select_related("app"), pk=session_pk)
    initial = {"eval_id": selectors.default_eval_id(session), "new_eval_set_id": f"{session.app.name}_evals"}
    form = AddSessionForm(request.POST or None, app_name=session.app.name, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            case = services.eval_case_add_from_session(
                session=session, eval_set=form.cleaned_data["eval_set"],
                new_eval_set_id=form.cleaned_data["new_eval_set_id"], eval_id=form.cleaned_data["eval_id"],
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
    return render(request, template, {"form": form, "session": session}, status=status)
