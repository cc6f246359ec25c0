"""HTML views of the eval app: eval sets, cases, runs, results, comparison."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from access.roles import deletes

from . import metrics, selectors, services, tasks
from .evalset_files import dump_eval_set_json, dump_eval_set_yaml
from .forms import ImportForm, RunForm
from .models import EvalCaseResult, EvalRun, EvalSet


@require_http_methods(["GET", "POST"])
def eval_set_list(request: HttpRequest) -> HttpResponse:
    tasks.reap()
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            eval_set = services.eval_set_import(
                parsed=form.parsed, app_name=form.cleaned_data["app_name"], metrics=form.metrics,
                user_simulator_config=form.user_simulator_config, replace=form.cleaned_data["replace"],
            )
        except services.EvalError as exc:
            form.add_error(None, str(exc))
        else:
            # The import makes the set's cases exactly the file's.
            count = len(form.parsed.eval_set.eval_cases)
            messages.success(request, f"Imported {count} cases into {eval_set.eval_set_id}.")
            return redirect("eval_app:eval_set_detail", pk=eval_set.pk)
    after = request.GET.get("after")
    try:
        page = selectors.eval_set_page(size=selectors.EVAL_SETS_PAGE, token=after)
    except ValueError:
        return bad_position(request, "after")
    last_runs = selectors.runs_by_pk([s.last_run for s in page.rows])
    context = {"rows": [(s, last_runs.get(s.last_run)) for s in page.rows], "more": page.next_token, "form": form}
    if request.htmx and after:  # "more sets": the rows after the last one shown
        return render(request, "eval_app/eval_set_list.html#set_rows", context)
    status = 400 if form.errors else 200
    return render(request, "eval_app/eval_set_list.html", context, status=status)


def bad_position(request: HttpRequest, param: str) -> HttpResponse:
    message = (f"The {param!r} parameter is not a position of this list: follow the page's own links, "
               "or start again from the first page.")
    return render(request, "400.html", {"message": message}, status=400)


def _eval_set_page(request: HttpRequest, eval_set: EvalSet, run_form: RunForm, status: int = 200) -> HttpResponse:
    cases_after, runs_after = request.GET.get("cases_after"), request.GET.get("runs_after")
    try:
        cases = selectors.eval_set_case_page(eval_set, size=selectors.CASES_PAGE, token=cases_after)
        if request.htmx and cases_after:
            context = {"eval_set": eval_set, "run_form": run_form, "cases": cases.rows, "more_cases": cases.next_token}
            return render(request, "eval_app/eval_set_detail.html#case_rows", context)
        history = selectors.run_history_page(eval_set, size=selectors.HISTORY_PAGE, token=runs_after)
    except ValueError:
        return bad_position(request, "cases_after" if cases_after else "runs_after")
    # The chart and the history's columns: the newest runs, whichever page of the history is shown
    # (on the first page, the page itself).
    recent = history.rows[::-1] if not runs_after else selectors.run_history(eval_set, limit=selectors.HISTORY_PAGE)
    context = {
        "eval_set": eval_set, "run_form": run_form,
        "cases": cases.rows, "more_cases": cases.next_token,
        "history": history.rows, "more_runs": history.next_token,
        "history_metrics": selectors.history_metric_names(recent),
    }
    if request.htmx and runs_after:
        return render(request, "eval_app/eval_set_detail.html#history_rows", context)
    context |= {"case_count": eval_set.cases.count(), "chart": selectors.trend_chart(recent)}
    return render(request, "eval_app/eval_set_detail.html", context, status=status)


@require_GET
def eval_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    tasks.reap()
    eval_set = get_object_or_404(EvalSet, pk=pk)
    return _eval_set_page(request, eval_set, RunForm(eval_set=eval_set))


@deletes
@require_POST
def eval_set_delete(request: HttpRequest, pk: int) -> HttpResponse:
    eval_set = get_object_or_404(EvalSet, pk=pk)
    services.eval_set_delete(eval_set=eval_set)
    messages.success(request, f"Deleted eval set {eval_set.eval_set_id}.")
    return redirect("eval_app:eval_set_list")


@require_GET
def eval_set_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    eval_set = get_object_or_404(EvalSet, pk=pk)
    if fmt == "config":
        # The set's criteria as stored (test_config.json's own form), else ADK's defaults.
        config: dict[str, Any] = {"criteria": eval_set.criteria or metrics.default_criteria()}
        if eval_set.user_simulator_config:
            config["user_simulator_config"] = eval_set.user_simulator_config
        body, name, kind = json.dumps(config, indent=2) + "\n", "test_config.json", "application/json"
    else:
        adk_set = selectors.adk_eval_set(eval_set)
        if fmt == "yaml":
            body, name, kind = dump_eval_set_yaml(adk_set), f"{eval_set.eval_set_id}.evalset.yaml", "application/yaml"
        elif fmt == "json":
            body, name, kind = dump_eval_set_json(adk_set), f"{eval_set.eval_set_id}.evalset.json", "application/json"
        else:
            raise Http404("Unknown export format.")
    response = HttpResponse(body, content_type=f"{kind}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_POST
def eval_run_create(request: HttpRequest, pk: int) -> HttpResponse:
    eval_set = get_object_or_404(EvalSet, pk=pk)
    form = RunForm(request.POST, eval_set=eval_set)
    if form.is_valid():
        try:
            run = services.eval_run_create(
                eval_set=eval_set, app_name=form.cleaned_data["app_name"], metrics=form.eval_metrics,
                judge_model=form.cleaned_data["judge_model"], eval_ids=form.chosen_eval_ids(),
                user_simulator_config=form.cleaned_data["user_simulator_config"],
                repeats=form.cleaned_data["repeats"], save_criteria=True,
            )
        except services.EvalError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("eval_app:run_detail", pk=run.pk)
    return _eval_set_page(request, eval_set, form, status=400)


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    tasks.reap()
    run = get_object_or_404(EvalRun.objects.select_related("eval_set"), pk=pk)
    after, lab_after = request.GET.get("after"), request.GET.get("lab_after")
    try:
        page = selectors.run_result_page(run, size=selectors.RESULTS_PAGE, token=after)
        lab = selectors.judge_lab_page(run, size=selectors.LAB_PAGE, token=lab_after) if run.repeats > 1 else None
    except ValueError:
        return bad_position(request, "lab_after" if lab_after else "after")
    context = {"run": run, "results": page.rows, "more": page.next_token,
               "lab": lab.rows if lab else [], "more_lab": lab.next_token if lab else ""}
    if request.htmx and after:  # "older results", below the rows shown
        return render(request, "eval_app/partials/result_rows.html", context)
    if request.htmx and lab_after:  # "more cases" of the judge lab
        return render(request, "eval_app/run_detail.html#lab_rows", context)
    context["others"] = selectors.other_runs(run)
    return render(request, "eval_app/run_detail.html", context)


def _back_to_run(request: HttpRequest, run: EvalRun) -> HttpResponse:
    url = reverse("eval_app:run_detail", args=[run.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
def run_stop(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EvalRun, pk=pk)
    try:
        services.eval_run_stop(run=run)
    except services.EvalError as exc:
        messages.error(request, str(exc))
    return _back_to_run(request, run)


@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EvalRun, pk=pk)
    try:
        services.eval_run_resume(run=run)
    except services.EvalError as exc:
        messages.error(request, str(exc))
    return _back_to_run(request, run)


@require_GET
def result_detail(request: HttpRequest, pk: int) -> HttpResponse:
    result = get_object_or_404(EvalCaseResult.objects.select_related("run__eval_set", "session"), pk=pk)
    return render(request, "eval_app/result_detail.html", {
        "result": result,
        "run": result.run,
        "invocations": selectors.case_result_views(result),
        "metrics": selectors.metric_views(result),
        "judge_groups": selectors.judge_groups(result),
        "simulated": selectors.is_scenario_case(result.case_data),
        "session_url": selectors.session_url(result.session_id),
    })


@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    try:
        a = get_object_or_404(EvalRun.objects.select_related("eval_set"), pk=int(request.GET.get("a", "")))
        b = get_object_or_404(EvalRun.objects.select_related("eval_set"), pk=int(request.GET.get("b", "")))
    except ValueError as exc:
        raise Http404("Pick two runs to compare.") from exc
    metric_names = list(dict.fromkeys(a.metric_names + b.metric_names))
    after = request.GET.get("after")
    try:
        page = selectors.run_compare_page(a, b, size=selectors.COMPARE_PAGE, token=after)
    except ValueError:
        return bad_position(request, "after")
    context = {
        "a": a, "b": b, "rows": page.rows, "more": page.next_token, "counts": page.counts,
        "metric_names": metric_names, "a_label": f"run #{a.pk}", "b_label": f"run #{b.pk}",
    }
    if request.htmx and after:  # "more cases", below the rows shown
        return render(request, "eval_app/compare.html#compare_rows", context)
    return render(request, "eval_app/compare.html", context)
