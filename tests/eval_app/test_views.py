"""The eval pages: import, export, run form, case editing, results, comparison, add from session."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from eval_app import services
from eval_app.evalset_files import default_specs, parse_eval_set_file, specs_from_stored
from eval_app.metrics import MetricSpec
from eval_app.models import EvalCase, EvalRun, EvalSet

from .conftest import AGENT, DEMO_DIR, DEMO_FILE

pytestmark = pytest.mark.django_db


def upload(name: str, content: bytes | str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def test_the_list_page_imports_an_evalset_with_its_test_config(client, demo_bytes):
    config = json.dumps({"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
                                      "response_match_score": 0.6}})
    response = client.post(reverse("eval_app:eval_set_list"), {
        "file": upload(DEMO_FILE.name, demo_bytes), "test_config": upload("test_config.json", config),
        "app_name": AGENT,
    })
    eval_set = EvalSet.objects.get()
    assert response.status_code == 302 and response.url == reverse("eval_app:eval_set_detail", args=[eval_set.pk])
    assert eval_set.cases.count() == 5
    assert eval_set.criteria["tool_trajectory_avg_score"]["match_type"] == "IN_ORDER"
    page = client.get(reverse("eval_app:eval_set_list")).content.decode()
    assert "trip_planner_demo" in page and ">5<" in page


def test_a_bad_upload_is_refused_whole_with_the_field_path(client, demo_bytes):
    data = json.loads(demo_bytes)
    data["eval_cases"][4]["conversation"][0]["final_response"] = 42
    response = client.post(reverse("eval_app:eval_set_list"), {"file": upload("bad.evalset.json", json.dumps(data))})
    assert response.status_code == 400
    assert "eval_cases[4].conversation[0].final_response" in response.content.decode()
    assert not EvalSet.objects.exists() and not EvalCase.objects.exists()


def test_exports_are_attachments_that_import_back(client, demo_set):
    for fmt, name in (("json", "trip_planner_demo.evalset.json"), ("yaml", "trip_planner_demo.evalset.yaml")):
        response = client.get(reverse("eval_app:eval_set_export", args=[demo_set.pk, fmt]))
        assert response["Content-Disposition"] == f'attachment; filename="{name}"'
        parsed = parse_eval_set_file(filename=name, content=response.content)
        assert [c.eval_id for c in parsed.eval_set.eval_cases] == list(demo_set.cases.values_list("eval_id", flat=True))
    config = client.get(reverse("eval_app:eval_set_export", args=[demo_set.pk, "config"]))
    assert json.loads(config.content) == json.loads((DEMO_DIR / "test_config.json").read_text())


def test_the_set_page_offers_agents_metrics_and_match_types(client, demo_set):
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    for text in ("trip_planner", "tool_trajectory_avg_score", "response_match_score", "IN_ORDER", "ANY_ORDER",
                 "ignore args", "plan_then_weather", 'name="repeats"'):
        assert text in page


def test_the_run_form_queues_a_run_of_the_selected_cases(client, demo_set):
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), {
        "app_name": AGENT, "scope": "selected", "eval_ids": ["greeting", "plan_lisbon"],
        "trajectory": "on", "trajectory_threshold": "0.5", "match_type": "ANY_ORDER", "ignore_args": "on",
        "response": "on", "response_threshold": "0.7", "repeats": "2",
    })
    run = EvalRun.objects.get()
    assert response.status_code == 302 and response.url == reverse("eval_app:run_detail", args=[run.pk])
    assert (run.eval_ids, run.repeats, run.total, run.status) == (["greeting", "plan_lisbon"], 2, 4, "queued")
    assert run.metrics == [
        {"metric_name": "tool_trajectory_avg_score", "threshold": 0.5, "match_type": "ANY_ORDER", "ignore_args": True},
        {"metric_name": "response_match_score", "threshold": 0.7},
    ]
    demo_set.refresh_from_db()  # the form's choices are the set's defaults next time
    # PostgreSQL's jsonb keeps no key order, so compare the criteria as a set of metrics.
    saved = sorted((s.as_dict() for s in specs_from_stored(demo_set.criteria)), key=lambda m: m["metric_name"])
    assert saved == sorted(run.metrics, key=lambda m: m["metric_name"])
    page = client.get(response.url).content.decode()
    assert 'ws-connect="/ws/evals/runs/%d/"' % run.pk in page and 'aria-valuenow="0"' in page


def test_a_refused_run_leaves_the_sets_criteria_alone(demo_set):
    before = demo_set.criteria
    with pytest.raises(services.EvalError):
        services.eval_run_create(eval_set=demo_set, app_name=AGENT, specs=[MetricSpec("response_match_score", 0.1)],
                                 eval_ids=["no_such_case"], start=False, save_criteria=True)
    demo_set.refresh_from_db()
    assert demo_set.criteria == before and not EvalRun.objects.exists()


def test_the_run_form_rejects_no_metric_and_bad_thresholds(client, demo_set):
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), {
        "app_name": AGENT, "scope": "all", "trajectory_threshold": "1.5", "match_type": "EXACT",
        "response_threshold": "0.8", "repeats": "1",
    })
    assert response.status_code == 400 and not EvalRun.objects.exists()
    assert "less than or equal to 1" in response.content.decode()


def test_a_case_is_edited_with_validation(client, demo_set):
    case = demo_set.cases.get(eval_id="plan_lisbon")
    url = reverse("eval_app:case_edit", args=[case.pk])
    assert "Please plan a trip to Lisbon" in client.get(url).content.decode()
    form = {
        "eval_id": "plan_lisbon", "user_id": "bob", "state": '{"user:name": "Bob"}',
        "turn-TOTAL_FORMS": "1", "turn-INITIAL_FORMS": "1",
        "turn-0-user_text": "Please plan a trip to Lisbon",
        "turn-0-expected_response": "Done! Your trip is planned.",
        "turn-0-expected_tool_calls": '[{"name": "plan_trip", "args": {"city": "Lisbon"}', # missing ]
    }
    bad = client.post(url, form)
    assert bad.status_code == 400 and "Not valid JSON" in bad.content.decode()
    bad = client.post(url, {**form, "turn-0-expected_tool_calls": '[{"args": {}}]'})
    assert "[0].name: a non-empty string is required" in bad.content.decode()
    bad = client.post(url, {**form, "state": "[1, 2]"})
    assert "The state must be a JSON object." in bad.content.decode()

    ok = client.post(url, {**form, "turn-0-expected_tool_calls": '[{"name": "plan_trip", "args": {"city": "Porto"}}]',
                           "turn-0-expected_response": "Planned."})
    assert ok.status_code == 302
    case.refresh_from_db()
    adk = case.adk()
    assert adk.session_input.user_id == "bob" and adk.session_input.state == {"user:name": "Bob"}
    assert adk.conversation[0].intermediate_data.tool_uses[0].args == {"city": "Porto"}
    assert adk.conversation[0].final_response.parts[0].text == "Planned."
    assert adk.conversation[0].invocation_id == "plan_lisbon-1"  # untouched fields survive


def test_renaming_a_case_to_an_existing_id_is_refused(client, demo_set):
    case = demo_set.cases.get(eval_id="greeting")
    response = client.post(reverse("eval_app:case_edit", args=[case.pk]), {
        "eval_id": "plan_lisbon", "user_id": "", "state": "",
        "turn-TOTAL_FORMS": "1", "turn-INITIAL_FORMS": "1", "turn-0-user_text": "Hi there!",
        "turn-0-expected_response": "x", "turn-0-expected_tool_calls": "[]",
    })
    assert response.status_code == 400 and "already has a case" in response.content.decode()


def test_agent_text_is_escaped(client, demo_set):
    case = demo_set.cases.get(eval_id="greeting")
    case.data["conversation"][0]["user_content"]["parts"][0]["text"] = "<script>alert(1)</script>"
    case.save()
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_stop_and_resume_buttons(client, demo_set):
    run = services.eval_run_create(eval_set=demo_set, app_name=AGENT, specs=default_specs(), start=False)
    # The pushed copy of the buttons has no CSRF token in the form: htmx sends it as a header.
    response = client.post(reverse("eval_app:run_stop", args=[run.pk]), headers={"HX-Request": "true"})
    assert response["HX-Redirect"] == reverse("eval_app:run_detail", args=[run.pk])
    run.refresh_from_db()
    assert run.status == "stopped"
    response = client.post(reverse("eval_app:run_resume", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "queued"  # its worker starts on commit
