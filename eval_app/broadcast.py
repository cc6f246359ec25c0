"""Eval run messages for the channel layer, sent through sessions_app's `send`.

What a viewer sees is rendered here, once per change, by the partials the page
uses, and every viewer's consumer forwards that HTML. Nothing is rendered for
a group nobody listens to, so a run that nobody watches costs nothing per case.

Table rows travel in frames of their own: an HTML fragment that starts with
other elements is parsed "in body", where <tbody> and <tr> are dropped.
"""
from __future__ import annotations

from django.template.loader import render_to_string

from sessions_app.broadcast import activity, listened, send
from sessions_app.relay import relayed

from . import selectors
from .models import EvalCaseResult, EvalRun


def run_group(run_pk: int) -> str:
    return f"evalrun.{run_pk}"


@relayed
def case_finished(*, result: EvalCaseResult) -> None:
    """The result's row, and the progress it brought; `result` lets viewers skip a row they have."""
    activity()
    group = run_group(result.run_id)
    if not listened(group):
        return
    run = selectors.run_find(result.run_id)
    if run is None:  # deleted since: nobody will see it
        return
    row = render_to_string("eval_app/partials/case_pushed.html", {"run": run, "result": result})
    send(group, {"type": "case.finished", "result": result.pk, "row": row, "live": _live(run)})


@relayed
def run_changed(*, run_pk: int) -> None:
    activity()
    group = run_group(run_pk)
    if not listened(group):
        return
    run = selectors.run_find(run_pk)
    if run is not None:
        send(group, {"type": "run.changed", "html": _live(run)})


def snapshot(run_pk: int) -> tuple[list[str], set[int]] | None:
    """What a viewer who just joined is sent (the newest rows, the first page as the page
    shows it, then the run's header and progress) and the pks of those rows; None when
    there is no such run. Rows finished later arrive on top; older ones, with "older results"."""
    run = selectors.run_find(run_pk)
    if run is None:
        return None
    page = selectors.run_result_page(run, size=selectors.RESULTS_PAGE)
    context = {"run": run, "results": page.rows, "more": page.next_token}
    rows = render_to_string("eval_app/partials/run_snapshot.html", context)
    return [rows, _live(run)], {r.pk for r in page.rows}


def _live(run: EvalRun) -> str:
    return render_to_string("eval_app/partials/run_live.html", {"run": run, "oob": True})
