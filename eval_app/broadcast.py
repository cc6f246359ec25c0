"""Eval run messages for the channel layer, sent through sessions_app's `send`.

Messages carry primary keys, not HTML: the run page's consumer renders what it
shows, so a run that nobody watches costs no template rendering per case.
"""
from __future__ import annotations

from sessions_app.broadcast import send


def run_group(run_pk: int) -> str:
    return f"evalrun.{run_pk}"


def case_finished(*, run_pk: int, result_pk: int) -> None:
    send(run_group(run_pk), {"type": "case.finished", "result": result_pk})


def run_changed(*, run_pk: int) -> None:
    send(run_group(run_pk), {"type": "run.changed"})
