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
    row = render_to_string("eval_app/partials/case_pushed.html", {"run": run, "results": [result]})
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


def snapshot(run_pk: int, *, after: int | None = None) -> tuple[list[str], set[int]] | None:
    """What a viewer who just joined is sent, and the pks of the rows in it; None
    when there is no such run.

    A page that holds the results up to `after` gets the newer ones on top of its
    rows, so rows it loaded meanwhile ("older results") stay; without `after`, or
    when more than a page is missing, the newest page replaces its rows. Then the
    run's header and progress. Rows finished later arrive on top."""
    run = selectors.run_find(run_pk)
    if run is None:
        return None
    if after is not None:
        newer = selectors.run_results_after(run, after=after, limit=selectors.RESULTS_PAGE + 1)
        if len(newer) <= selectors.RESULTS_PAGE:
            frames = [render_to_string("eval_app/partials/case_pushed.html", {"run": run, "results": newer})] if newer else []
            return [*frames, _live(run)], {r.pk for r in newer}
    page = selectors.run_result_page(run, size=selectors.RESULTS_PAGE)
    context = {"run": run, "results": page.rows, "more": page.next_token}
    rows = render_to_string("eval_app/partials/run_snapshot.html", context)
    return [rows, _live(run)], {r.pk for r in page.rows}


def _live(run: EvalRun) -> str:
    return render_to_string("eval_app/partials/run_live.html", {"run": run, "oob": True})
