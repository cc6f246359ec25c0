"""Every query parameter a page reads, given hostile values: never a 5xx.

The pages are those of a real store: the demo agent's session (model and
tool calls, an invocation trace) and a completed run of the demo eval set.
Which parameters a page reads is not listed here but recorded: each page is
opened once plainly while every read of `request.GET` is noted, then each
noted parameter is sent again with each hostile value (the page's other
parameters as before). A parameter a view starts reading is swept with it.
"""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from eval_app import services as eval_services
from eval_app.evalset_files import stored_eval_metrics
from eval_app.models import EvalCaseResult, EvalRun, EvalSet
from inspector_app.models import ModelCall, ToolCall
from runtime_app.demo import DEMO_APP, DEMO_SESSION, load_demo
from sessions_app.models import Event, Session

HOSTILE_VALUES = ("", "-1", "0", "1e400", "nan", "99999999999999999999999", "%", "[]", "x'\"<>☃" * 60)


@pytest.fixture
def store(service: Any, settings: Any) -> dict[str, Any]:
    """The demo's session and a completed run of its deterministic eval set."""
    settings.ADKUI_LOCAL_DEV = True
    load_demo()
    eval_set = EvalSet.objects.get(app_name=DEMO_APP, eval_set_id="trip_planner_demo")
    run = eval_services.eval_run_create(eval_set=eval_set, app_name=DEMO_APP,
                                        metrics=stored_eval_metrics(eval_set.criteria))
    run.refresh_from_db()
    assert run.status == EvalRun.COMPLETED, run.status
    session = Session.objects.get(session_id=DEMO_SESSION)
    tool_event = Event.objects.filter(session=session, data__content__parts__0__function_call__isnull=False).first()
    return {
        "session": session, "eval_set": eval_set, "run": run,
        "result": EvalCaseResult.objects.filter(run=run).order_by("pk").first(),
        "case": eval_set.cases.order_by("pk").first(),
        "model_call": ModelCall.objects.order_by("pk").first(),
        "tool_call": ToolCall.objects.order_by("pk").first(),
        "tool_event": tool_event,
    }


def _pages(s: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    pk, app = s["session"].pk, DEMO_APP
    seq, invocation = s["tool_event"].seq, s["tool_event"].invocation_id
    return [
        ("/", {}),
        (f"/apps/{app}/", {}),
        (f"/apps/{app}/search/", {"q": "Lisbon"}),
        (f"/sessions/{pk}/", {}),
        (f"/sessions/{pk}/events/", {}),
        (f"/sessions/{pk}/state/", {"seq": str(seq)}),
        (f"/sessions/{pk}/key-history/", {"key": "user:name"}),
        (f"/sessions/{pk}/rewind/", {"seq": str(seq)}),
        (f"/sessions/{pk}/fork/preview/", {"seq": str(seq)}),
        (f"/sessions/{pk}/delete/", {}),
        ("/evals/", {}),
        (f"/evals/sets/{s['eval_set'].pk}/", {}),
        (f"/evals/sets/{s['eval_set'].pk}/export/json/", {}),
        (f"/evals/runs/{s['run'].pk}/", {}),
        (f"/evals/results/{s['result'].pk}/", {}),
        ("/evals/compare/", {"a": str(s["run"].pk), "b": str(s["run"].pk)}),
        (f"/evals/cases/{s['case'].pk}/edit/", {}),
        (f"/evals/sessions/{pk}/add/", {}),
        (f"/memory/sessions/{pk}/artifacts/", {}),
        (f"/memory/sessions/{pk}/memory/", {}),
        (f"/memory/sessions/{pk}/conversation/", {}),
        (f"/inspect/sessions/{pk}/events/{seq}/", {}),
        (f"/inspect/sessions/{pk}/totals/", {}),
        (f"/inspect/sessions/{pk}/invocations/{invocation}/", {}),
        (f"/inspect/model-calls/{s['model_call'].pk}/", {}),
        (f"/inspect/tool-calls/{s['tool_call'].pk}/", {}),
        ("/imports/local/", {}),
    ]


@pytest.mark.django_db(transaction=True)
def test_no_parameter_a_page_reads_breaks_it(store: dict[str, Any], query_reads: set[str]) -> None:
    client = Client(raise_request_exception=False)
    swept: dict[str, set[str]] = {}
    for path, base in _pages(store):
        query_reads.clear()
        plain = client.get(path, base)
        assert plain.status_code == 200, (path, plain.status_code)
        swept[path] = set(query_reads)
        for key in sorted(swept[path]):
            for value in HOSTILE_VALUES:
                response = client.get(path, {**base, key: value})
                assert response.status_code < 500, (path, key, value[:20], response.content[:300])
    # The recording works: the pages' known parameters were found and swept.
    pk = store["session"].pk
    assert {"at", "key", "author", "kind"} <= swept[f"/sessions/{pk}/"]
    assert {"q"} <= swept[f"/apps/{DEMO_APP}/search/"] and {"a", "b"} <= swept["/evals/compare/"]
    assert {"sort", "user", "attention"} <= swept[f"/apps/{DEMO_APP}/"]
