"""The eval pages: import, export, run form, case editing, results, comparison, add from session."""
from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils.html import escape

from eval_app import judges, metrics, services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.forms import RunForm
from eval_app.models import EvalCase, EvalRun, EvalSet, EvalWorkItem
from eval_app.selectors import adk_eval_case

from .conftest import AGENT, DEMO_DIR, DEMO_FILE

pytestmark = pytest.mark.django_db


def upload(name: str, content: bytes | str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def test_the_list_page_imports_an_evalset_with_its_test_config(client, demo_bytes):
    config = json.dumps({"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
                                      "response_match_score": 0.6},
                         "user_simulator_config": {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 2}})
    response = client.post(reverse("eval_app:eval_set_list"), {
        "file": upload(DEMO_FILE.name, demo_bytes), "test_config": upload("test_config.json", config),
        "app_name": AGENT,
    })
    eval_set = EvalSet.objects.get()
    assert response.status_code == 302 and response.url == reverse("eval_app:eval_set_detail", args=[eval_set.pk])
    assert eval_set.cases.count() == 5
    assert eval_set.criteria["tool_trajectory_avg_score"]["match_type"] == "IN_ORDER"
    assert eval_set.user_simulator_config == {"type": "llm_backed", "model": judges.SCRIPTED_JUDGE,
                                              "max_allowed_invocations": 2}
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


def run_form(**fields) -> dict:
    """A run form post: the demo agent, all cases, one repeat, plus `fields`."""
    return {"app_name": AGENT, "scope": "all", "repeats": "1", "judge_model": "", **fields}


def nothing_created(eval_set: EvalSet, criteria_before: dict) -> bool:
    eval_set.refresh_from_db()
    return not EvalRun.objects.exists() and not EvalWorkItem.objects.exists() and eval_set.criteria == criteria_before


def test_the_set_page_offers_every_adk_metric_grouped_with_its_options(client, demo_set):
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    for info in metrics.metrics_info():
        assert f'id="metric-{info.metric_name}"' in page
        assert escape(info.description or "") in page  # ADK's own description
    groups = [g for g in ("Deterministic metrics", "LLM-as-judge metrics", "Informational (recorded for every run)")]
    assert [page.index(g) for g in groups] == sorted(page.index(g) for g in groups)
    informational = page[page.index("Informational (recorded for every run)"):page.index('id="user-simulator"')]
    for name in metrics.INFORMATIONAL:
        assert f"<code>{name}</code> <span class=\"badge muted\">always on</span>" in informational
        assert f'name="{name}__on"' not in page
    # Options by criterion type: match type and ignore args, rubrics, judge model and samples.
    assert 'name="tool_trajectory_avg_score__match_type"' in page and "ANY_ORDER" in page
    assert 'name="tool_trajectory_avg_score__ignore_args"' in page
    assert 'name="rubric_based_final_response_quality_v1__rubrics"' in page
    assert 'name="final_response_match_v2__judge_model"' in page and 'name="final_response_match_v2__num_samples"' in page
    assert 'name="response_match_score__judge_model"' not in page and 'name="response_match_score__rubrics"' not in page
    assert 'name="final_session_state_match__threshold"' in page
    # ADK's default criteria are chosen for a set that has none; the default judge is shown.
    assert 'name="tool_trajectory_avg_score__on" id="id_tool_trajectory_avg_score__on" checked' in page
    assert 'name="final_response_match_v2__on" id="id_final_response_match_v2__on">' in page
    hint = re.search(r'<p[^>]*id="default-judge">(.*?)</p>', page, re.S).group(1)
    assert f"blank: <code>{judges.default_judge_model()}</code>" in hint and hint.count("blank") == 1
    for text in ("trip_planner", "plan_then_weather", 'name="repeats"', 'name="judge_model"'):
        assert text in page


def test_the_run_form_builds_adk_criteria_and_queues_the_run(client, demo_set):
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        scope="selected", eval_ids=["greeting", "plan_lisbon"], repeats="2", judge_model=judges.SCRIPTED_JUDGE,
        tool_trajectory_avg_score__on="on", tool_trajectory_avg_score__threshold="0.5",
        tool_trajectory_avg_score__match_type="ANY_ORDER", tool_trajectory_avg_score__ignore_args="on",
        final_session_state_match__on="on", final_session_state_match__threshold="1",
        final_response_match_v2__on="on", final_response_match_v2__threshold="0.6",
        final_response_match_v2__num_samples="2",
        rubric_based_final_response_quality_v1__on="on", rubric_based_final_response_quality_v1__threshold="0.5",
        rubric_based_final_response_quality_v1__num_samples="1",
        rubric_based_final_response_quality_v1__rubrics="concise: The answer is short.\n\nThe answer names the city.",
    ))
    run = EvalRun.objects.get()
    assert response.status_code == 302 and response.url == reverse("eval_app:run_detail", args=[run.pk])
    assert (run.eval_ids, run.repeats, run.total, run.judge_model) == (["greeting", "plan_lisbon"], 2, 4,
                                                                       judges.SCRIPTED_JUDGE)
    by_name = {m["metric_name"]: m for m in run.metrics}
    assert sorted(by_name) == ["final_response_match_v2", "final_session_state_match",
                               "rubric_based_final_response_quality_v1", "tool_trajectory_avg_score"]
    trajectory = by_name["tool_trajectory_avg_score"]["criterion"]
    assert (trajectory["threshold"], trajectory["match_type"], trajectory["ignore_args"]) == (0.5, 2, True)
    assert by_name["final_session_state_match"]["criterion"]["threshold"] == 1.0
    judge = by_name["final_response_match_v2"]["criterion"]["judge_model_options"]
    assert (judge["judge_model"], judge["num_samples"]) == (judges.SCRIPTED_JUDGE, 2)
    rubrics = by_name["rubric_based_final_response_quality_v1"]["criterion"]["rubrics"]
    assert [(r["rubric_id"], r["rubric_content"]["text_property"]) for r in rubrics] == [
        ("concise", "The answer is short."), ("rubric_2", "The answer names the city.")]

    # The set keeps them as ADK's criteria, and the form starts from them next time.
    demo_set.refresh_from_db()
    assert demo_set.criteria["tool_trajectory_avg_score"]["match_type"] == "ANY_ORDER"
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    assert 'name="response_match_score__on" id="id_response_match_score__on">' in page  # not asked this time
    assert 'name="final_session_state_match__on" id="id_final_session_state_match__on" checked' in page
    assert '<option value="ANY_ORDER" selected>' in page
    assert "concise: The answer is short.\nrubric_2: The answer names the city.</textarea>" in page
    assert 'name="final_response_match_v2__num_samples" value="2"' in page
    run_page = client.get(response.url).content.decode()
    assert 'ws-connect="/ws/evals/runs/%d/?after=0"' % run.pk in run_page  # no result yet
    assert "ANY_ORDER · ignore args" in run_page and f"judge {judges.SCRIPTED_JUDGE} × 2" in run_page


def test_the_run_form_keeps_adks_user_simulator_config_with_the_set(client, demo_set):
    given = {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 3}
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        response_match_score__on="on", response_match_score__threshold="0.5", user_simulator_config=json.dumps(given)))
    run = EvalRun.objects.get()
    assert response.status_code == 302
    expected = {"type": "llm_backed", **given}  # as ADK reads it: its type, and the fields given
    assert run.user_simulator_config == expected
    assert judges.user_simulator_provider(run.user_simulator_config, "")._user_simulator_config.max_allowed_invocations == 3
    demo_set.refresh_from_db()
    assert demo_set.user_simulator_config == expected
    # The form starts from it next time, and the set's test_config.json carries it.
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk]))
    assert json.loads(page.context["run_form"]["user_simulator_config"].value()) == expected
    assert '<details class="simulator" id="user-simulator" open>' in page.content.decode()
    config = json.loads(client.get(reverse("eval_app:eval_set_export", args=[demo_set.pk, "config"])).content)
    assert config["user_simulator_config"] == expected
    # Left blank, the next run uses ADK's default simulator, and so does the form after it.
    client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        response_match_score__on="on", response_match_score__threshold="0.5", user_simulator_config=" "))
    demo_set.refresh_from_db()
    assert demo_set.user_simulator_config is None and EvalRun.objects.latest("pk").user_simulator_config is None


def test_a_judge_metric_without_a_judge_model_gets_the_runs(client, demo_set):
    client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        final_response_match_v2__on="on", final_response_match_v2__threshold="0.5",
        final_response_match_v2__num_samples="1"))
    [metric] = EvalRun.objects.get().metrics
    assert metric["criterion"]["judge_model_options"]["judge_model"] == judges.default_judge_model()


@pytest.mark.parametrize("fields, field, message", [
    ({"rubric_based_final_response_quality_v1__on": "on", "rubric_based_final_response_quality_v1__threshold": "0.5",
      "rubric_based_final_response_quality_v1__num_samples": "1", "rubric_based_final_response_quality_v1__rubrics": " "},
     "rubric_based_final_response_quality_v1__rubrics", "needs at least one rubric"),
    ({"final_response_match_v2__on": "on", "final_response_match_v2__threshold": "0.5",
      "final_response_match_v2__num_samples": "1", "final_response_match_v2__judge_model": "no-such-model-xyz"},
     "final_response_match_v2__judge_model", "no-such-model-xyz"),
    ({"judge_model": "no-such-model-xyz", "response_match_score__on": "on", "response_match_score__threshold": "0.5"},
     "judge_model", "no-such-model-xyz"),
    ({"response_match_score__on": "on", "response_match_score__threshold": "1.5"},
     "response_match_score__threshold", "less than or equal to 1"),
    ({"response_match_score__on": "on", "response_match_score__threshold": ""},
     "response_match_score__threshold", "A threshold is required"),
    ({"tool_trajectory_avg_score__threshold": "1"}, None, "Choose at least one metric."),
    ({"response_match_score__on": "on", "response_match_score__threshold": "0.5", "user_simulator_config": "{model"},
     "user_simulator_config", "Not valid JSON"),
    ({"response_match_score__on": "on", "response_match_score__threshold": "0.5",
      "user_simulator_config": '{"a": ' * 5000 + "1" + "}" * 5000},
     "user_simulator_config", "nests deeper than"),
    ({"response_match_score__on": "on", "response_match_score__threshold": "0.5", "user_simulator_config": "[4]"},
     "user_simulator_config", "A JSON object is needed"),
    ({"response_match_score__on": "on", "response_match_score__threshold": "0.5",
      "user_simulator_config": '{"max_allowed_invocations": "many"}'},
     "user_simulator_config", "max_allowed_invocations"),
])
def test_a_bad_run_form_names_the_field_and_creates_nothing(client, demo_set, fields, field, message):
    before = demo_set.criteria
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(**fields))
    assert response.status_code == 400
    form = response.context["run_form"]
    errors = form.errors.get(field or "__all__")
    assert errors and message in " ".join(errors), form.errors
    assert message in html.unescape(response.content.decode())
    assert nothing_created(demo_set, before)


def test_an_unknown_metric_is_refused_by_adk_config_checks_naming_it(client, demo_set):
    # The form offers only registered metrics; a MetricConfigError naming a metric lands on its field.
    form = RunForm(run_form(final_response_match_v2__on="on", final_response_match_v2__threshold="0.5",
                            final_response_match_v2__num_samples="1"), eval_set=demo_set)
    assert form._field_of("criteria.final_response_match_v2.judge_model_options.judge_model") == \
        "final_response_match_v2__judge_model"
    assert form._field_of("criteria.no_such_metric") is None and form._field_of("criteria") is None
    with pytest.raises(metrics.MetricConfigError) as refused:
        metrics.eval_metrics({"no_such_metric": 0.5})
    assert form._field_of(refused.value.field) is None  # a form error of its own, naming the metric
    assert "no_such_metric" in str(refused.value)
    # A set whose stored criteria name a metric ADK does not know still shows its page, saying so.
    demo_set.criteria = {"no_such_metric": 0.5, "response_match_score": 0.7}
    demo_set.save()
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    assert "no_such_metric" in page and "not in ADK" in page
    assert 'name="response_match_score__on" id="id_response_match_score__on" checked' in page
    assert not EvalRun.objects.exists()


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
    assert "must be a JSON object" in bad.content.decode()  # the case editor (ISOLATION) names which

    ok = client.post(url, {**form, "turn-0-expected_tool_calls": '[{"name": "plan_trip", "args": {"city": "Porto"}}]',
                           "turn-0-expected_response": "Planned."})
    assert ok.status_code == 302
    case.refresh_from_db()
    adk = adk_eval_case(case)
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
    run = services.eval_run_create(eval_set=demo_set, app_name=AGENT, metrics=metrics.eval_metrics(metrics.default_criteria()),
                                   start=False)
    # The pushed copy of the buttons has no CSRF token in the form: htmx sends it as a header.
    response = client.post(reverse("eval_app:run_stop", args=[run.pk]), headers={"HX-Request": "true"})
    assert response["HX-Redirect"] == reverse("eval_app:run_detail", args=[run.pk])
    run.refresh_from_db()
    assert run.status == "stopped"
    response = client.post(reverse("eval_app:run_resume", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "queued"  # its worker starts on commit


def test_a_metric_that_needs_vertex_ai_is_offered_disabled_with_its_reason(client, demo_set, monkeypatch):
    for name in ("GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    demo_set.criteria = {"safety_v1": 0.8, "response_match_score": 0.7}
    demo_set.save()
    page = client.get(reverse("eval_app:eval_set_detail", args=[demo_set.pk])).content.decode()
    unavailable = page[page.index("Not available here"):page.index('id="user-simulator"')]
    assert "cannot run offline" in unavailable and "GOOGLE_API_KEY" in unavailable
    for name in judges.VERTEX_METRICS:
        box = re.search(rf'<input[^>]*name="{name}__on"[^>]*>', unavailable).group(0)
        assert "disabled" in box and "checked" not in box and "Vertex AI" in box  # its reason in the title
        assert f'name="{name}__threshold"' not in page
    # A saved criterion that cannot run here is left out, and the page says so.
    assert re.search(r"saved criteria name <code>safety_v1</code>, which cannot run here", page)
    # A crafted post gets one error that names the metric once, and nothing is created.
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        response_evaluation_score__on="on", response_evaluation_score__threshold="4"))
    assert response.status_code == 400
    [error] = re.findall(r'<ul class="errorlist"[^>]*><li>(.*?)</li>', response.content.decode(), re.S)
    assert html.unescape(error).count("response_evaluation_score") == 1 and "cannot run offline" in error
    assert not EvalRun.objects.exists()


def test_the_run_form_refuses_a_case_id_the_set_does_not_hold_naming_it(client, demo_set):
    # The ids are checked against the set's cases in the database (the form no longer lists them all).
    response = client.post(reverse("eval_app:run_create", args=[demo_set.pk]), run_form(
        scope="selected", eval_ids=["greeting", "no_such_case"], repeats="1"))
    assert response.status_code == 400 and "no_such_case" in response.content.decode()
    assert not EvalRun.objects.exists()
