"""Import and export of ADK eval set files: round trips, ADK's own readers, and rejections."""
from __future__ import annotations

import json

import pytest
import yaml
from google.adk.evaluation.eval_config import get_eval_metrics_from_config, get_evaluation_criteria_or_default
from google.adk.evaluation.eval_metrics import RubricsBasedCriterion, ToolTrajectoryCriterion
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager, load_eval_set_from_file

from eval_app import evalset_files, judges, metrics, services
from eval_app.evalset_files import (
    EvalSetFileError,
    build_eval_set,
    default_eval_config,
    dump_eval_set_json,
    dump_eval_set_yaml,
    dump_test_config,
    parse_eval_config,
    parse_eval_set_file,
    parse_test_config,
    stored_eval_config,
    user_simulator_config_json,
)
from eval_app.models import EvalCase, EvalSet
from eval_app.selectors import adk_eval_case

from .conftest import AGENT, DEMO_FILE

LEGACY_TURNS = [
    {"query": "Please plan a trip to Lisbon", "expected_tool_use": [{"tool_name": "plan_trip", "tool_input": {"city": "Lisbon"}}],
     "reference": "Done! Your trip is planned."},
    {"query": "Hi there!", "expected_tool_use": [], "reference": "Hello!"},
]


def exported(eval_set: EvalSet) -> AdkEvalSet:
    return build_eval_set(
        eval_set_id=eval_set.eval_set_id, name=eval_set.name, description=eval_set.description,
        creation_timestamp=eval_set.creation_timestamp, cases=[c.data for c in eval_set.cases.ordered()],
    )


def test_an_evalset_file_round_trips_through_the_database(demo_set):
    original = AdkEvalSet.model_validate_json(DEMO_FILE.read_text())
    again = parse_eval_set_file(filename="x.evalset.json", content=dump_eval_set_json(exported(demo_set))).eval_set
    assert again == original
    assert [c.eval_id for c in demo_set.cases.ordered()] == [c.eval_id for c in original.eval_cases]
    # The case JSON is kept whole: ADK rebuilds exactly the case that was imported.
    assert adk_eval_case(demo_set.cases.get(eval_id="plan_then_weather")) == original.eval_cases[3]


def test_yaml_of_the_same_shape_round_trips(demo_set):
    text = dump_eval_set_yaml(exported(demo_set))
    assert yaml.safe_load(text)["eval_set_id"] == "trip_planner_demo"
    parsed = parse_eval_set_file(filename="demo.evalset.yaml", content=text)
    assert parsed.format == "yaml"
    assert parsed.eval_set == AdkEvalSet.model_validate_json(DEMO_FILE.read_text())


def test_adks_own_readers_accept_the_export(demo_set, tmp_path):
    # adk eval reads a file with load_eval_set_from_file, and an id through LocalEvalSetsManager.
    (tmp_path / AGENT).mkdir()
    path = tmp_path / AGENT / "trip_planner_demo.evalset.json"
    path.write_text(dump_eval_set_json(exported(demo_set)))
    from_file = load_eval_set_from_file(str(path), "trip_planner_demo")
    by_id = LocalEvalSetsManager(agents_dir=str(tmp_path)).get_eval_set(AGENT, "trip_planner_demo")
    assert from_file == by_id == AdkEvalSet.model_validate_json(DEMO_FILE.read_text())


RUBRIC = {"rubric_id": "r1", "rubric_content": {"text_property": "The answer names the city."}}
CONFIG = {"criteria": {
    "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER", "ignore_args": True},
    "response_match_score": 0.7,
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.6, "judge_model_options": {"judge_model": judges.SCRIPTED_JUDGE, "num_samples": 3},
        "rubrics": [RUBRIC]},
}}


def test_the_exported_test_config_is_read_back_by_adk_and_by_us(tmp_path):
    eval_metrics = parse_test_config(content=json.dumps(CONFIG))
    assert [m.metric_name for m in eval_metrics] == list(CONFIG["criteria"])
    path = tmp_path / "test_config.json"
    path.write_text(dump_test_config(eval_metrics))
    adks = get_eval_metrics_from_config(get_evaluation_criteria_or_default(str(path)))
    by_name = {m.metric_name: m for m in adks}
    assert by_name[metrics.RESPONSE_MATCH].threshold == 0.7
    trajectory = ToolTrajectoryCriterion.model_validate(by_name[metrics.TRAJECTORY].criterion.model_dump())
    assert (trajectory.match_type, trajectory.ignore_args) == (ToolTrajectoryCriterion.MatchType.IN_ORDER, True)
    rubric = RubricsBasedCriterion.model_validate(by_name["rubric_based_final_response_quality_v1"].criterion.model_dump())
    assert (rubric.judge_model_options.num_samples, rubric.rubrics[0].rubric_id) == (3, "r1")
    assert parse_test_config(content=path.read_bytes()) == eval_metrics


def test_test_config_criteria_may_be_numbers_objects_or_camel_case():
    trajectory, response = parse_test_config(content=json.dumps({"criteria": {
        "tool_trajectory_avg_score": {"threshold": 0.9, "match_type": "any_order", "ignore_args": True},
        "response_match_score": 1,
    }}))
    assert isinstance(trajectory.criterion, ToolTrajectoryCriterion)
    assert (trajectory.threshold, trajectory.criterion.match_type.name, trajectory.criterion.ignore_args) == (
        0.9, "ANY_ORDER", True)
    assert (response.metric_name, response.threshold) == (metrics.RESPONSE_MATCH, 1.0)
    [camel] = parse_test_config(content='{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": "IN_ORDER"}}}')
    assert (camel.criterion.match_type.name, camel.criterion.ignore_args) == ("IN_ORDER", False)


def test_the_config_keeps_adks_user_simulator_config():
    config, _ = parse_eval_config(content=json.dumps({
        "criteria": {"response_match_score": 0.5},
        "user_simulator_config": {"model": judges.SCRIPTED_JUDGE, "max_allowed_invocations": 4},
    }))
    assert config.user_simulator_config.type == "llm_backed"  # ADK's default for a config without a type
    assert user_simulator_config_json({"model": "m", "max_allowed_invocations": 4})["max_allowed_invocations"] == 4
    with pytest.raises(EvalSetFileError) as caught:
        user_simulator_config_json({"type": "llm_backed", "max_allowed_invocations": "many"})
    assert "max_allowed_invocations" in str(caught.value.problems)


@pytest.mark.parametrize("content,expected", [
    ('{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"}}}',
     "criteria.tool_trajectory_avg_score"),
    ('{"criteria": {"no_such_metric": 0.5}}', "criteria.no_such_metric: Unknown metric"),
    ('{"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.5}}}',
     "criteria.rubric_based_final_response_quality_v1.rubrics"),
    ('{"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": '
     '{"judge_model": "no-such-model-anywhere"}}}}', "criteria.final_response_match_v2.judge_model_options.judge_model"),
    ('{"criteria": {"response_match_score": "high"}}', "criteria.response_match_score"),
    ('{"criteria": {"tool_call_count_v1": 1}}', "criteria.tool_call_count_v1"),
    ('{"criteria": {"response_match_score": 0.5}, "user_simulator_config": {"type": "nope"}}',
     "user_simulator_config"),
    ('{"criteria": ', "line 1 column 14"),
])
def test_a_bad_test_config_is_rejected_with_its_field_path(content, expected):
    with pytest.raises(EvalSetFileError) as caught:
        parse_test_config(content=content)
    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


def test_a_judge_model_that_cannot_load_is_named():
    with pytest.raises(EvalSetFileError) as caught:
        parse_test_config(content='{"criteria": {"final_response_match_v2": 0.5}}', judge_model="no-such-model-anywhere")
    assert "criteria.final_response_match_v2.judge_model_options.judge_model" in caught.value.problems[0]


def test_a_legacy_test_json_becomes_one_case_as_adk_converts_it():
    parsed = parse_eval_set_file(filename="trips.test.json", content=json.dumps(LEGACY_TURNS))
    assert parsed.format == "legacy"
    eval_set = parsed.eval_set
    assert eval_set.eval_set_id == "trips"
    [case] = eval_set.eval_cases
    assert case.eval_id == "trips"
    first, second = case.conversation
    assert first.user_content.parts[0].text == "Please plan a trip to Lisbon"
    assert first.final_response.parts[0].text == "Done! Your trip is planned."
    assert [(c.name, c.args) for c in metrics.tool_calls(first)] == [("plan_trip", {"city": "Lisbon"})]
    assert metrics.tool_calls(second) == []


def test_the_legacy_list_of_named_cases_keeps_the_initial_session():
    content = json.dumps([{
        "name": "lisbon", "data": LEGACY_TURNS[:1],
        "initial_session": {"app_name": AGENT, "user_id": "ann", "state": {"user:name": "Ann"}},
    }])
    [case] = parse_eval_set_file(filename="old.json", content=content).eval_set.eval_cases
    assert case.eval_id == "lisbon"
    assert (case.session_input.user_id, case.session_input.state) == ("ann", {"user:name": "Ann"})


def bad_evalset(**changes) -> str:
    data = json.loads(DEMO_FILE.read_text())
    for path, value in changes.items():
        target = data
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key) if key.isdigit() else key]
        if value is KeyError:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return json.dumps(data)


@pytest.mark.parametrize("filename,content,expected", [
    ("x.evalset.json", '{"eval_set_id": "x", "eval_cases": [', "line 1 column"),
    ("x.evalset.json", bad_evalset(eval_cases__1__eval_id=KeyError), "eval_cases[1].eval_id: Field required"),
    ("x.evalset.json", bad_evalset(eval_cases__2__conversation__0__user_content="hi"),
     "eval_cases[2].conversation[0].user_content"),
    ("x.evalset.json", bad_evalset(eval_cases__0__surprise=1, eval_cases__0__conversation__0__oops=2),
     "eval_cases[0].conversation[0].oops: Extra inputs are not permitted"),
    ("x.evalset.json", bad_evalset(eval_cases__1__eval_id="greeting"), "eval_cases[1].eval_id: duplicate eval id"),
    ("x.evalset.json", '"just a string"', "expected an eval set object or a list"),
    ("x.yaml", "eval_set_id: x\neval_cases: [\n", "line 3 column 1"),
    ("x.test.json", json.dumps([{"query": "hi", "expected_tool_use": [{"tool_input": {}}]}]),
     "[0].expected_tool_use[0].tool_name: a string is required"),
    ("x.test.json", json.dumps([{"query": "hi", "reference": 3}]), "[0].reference: expected a string"),
    ("x.json", json.dumps([{"name": "a", "data": [{"reference": "r"}]}]), "[0].data[0].query: a string is required"),
])
def test_a_bad_file_is_rejected_with_the_field_path_and_reason(filename, content, expected):
    with pytest.raises(EvalSetFileError) as caught:
        parse_eval_set_file(filename=filename, content=content)
    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


def test_an_existing_set_is_only_replaced_when_asked(demo_set):
    parsed = parse_eval_set_file(filename="trips.test.json", content=json.dumps(LEGACY_TURNS))
    parsed.eval_set.eval_set_id = demo_set.eval_set_id
    with pytest.raises(services.EvalError):
        services.eval_set_import(parsed=parsed, app_name=AGENT)
    assert demo_set.cases.count() == 5
    services.eval_set_import(parsed=parsed, app_name=AGENT, replace=True)
    assert list(demo_set.cases.values_list("eval_id", flat=True)) == ["trips"]
    assert EvalSet.objects.count() == 1


def test_nothing_is_half_imported_when_the_database_refuses_a_case(db):
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    parsed.eval_set.eval_cases[3].eval_id = parsed.eval_set.eval_cases[0].eval_id  # past validation
    with pytest.raises(Exception):
        services.eval_set_import(parsed=parsed, app_name=AGENT)
    assert EvalSet.objects.count() == 0 and EvalCase.objects.count() == 0


def test_replacing_keeps_the_rows_of_cases_that_keep_their_id(demo_set):
    before = dict(demo_set.cases.values_list("eval_id", "pk"))
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    parsed.eval_set.eval_cases = parsed.eval_set.eval_cases[1:]  # greeting dropped
    parsed.eval_set.eval_cases[0].conversation[0].final_response.parts[0].text = "Planned!"
    services.eval_set_import(parsed=parsed, app_name=AGENT, replace=True)
    after = dict(demo_set.cases.values_list("eval_id", "pk"))
    assert after == {k: v for k, v in before.items() if k != "greeting"}
    assert adk_eval_case(demo_set.cases.get(eval_id="plan_lisbon")).conversation[0].final_response.parts[0].text == "Planned!"


def test_a_stored_sets_user_simulator_config_goes_into_its_eval_config():
    config = stored_eval_config({"response_match_score": 0.5}, {"type": "llm_backed", "max_allowed_invocations": 3})
    assert config.user_simulator_config.max_allowed_invocations == 3
    assert list(config.criteria) == ["response_match_score"]
    assert stored_eval_config({}, None) == default_eval_config()


def test_yaml_whose_aliases_repeat_long_text_beyond_a_file_is_refused_before_it_is_built(monkeypatch):
    """Few values, so the value count passes: 220 aliases of 100 kB of text (~22 MB, the size an
    uploaded file may not have) were imported and stored whole (#29)."""
    built = []
    monkeypatch.setattr(evalset_files.yaml, "safe_load", lambda text: built.append(text))
    text = "x" * 100_000
    yaml_text = f"eval_set_id: big\nnote: &t {text}\neval_cases: [" + ", ".join(["*t"] * 220) + "]\n"
    assert len(yaml_text) < evalset_files.MAX_FILE_BYTES // 100
    with pytest.raises(evalset_files.EvalSetFileError) as refused:
        evalset_files.parse_eval_set_file(filename="big.yaml", content=yaml_text.encode())
    assert str(evalset_files.MAX_FILE_BYTES) in str(refused.value) and not built
