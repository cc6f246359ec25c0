"""Forms: import, run, add-from-session and case editing, each validated with ADK's models."""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, MetricInfo, ToolTrajectoryCriterion
from google.adk.sessions.state import State
from google.genai import types
from pydantic import ValidationError

from access import limits

from sessions_app.runtime import agent_names

from . import judges, metrics, selectors, state_metric
from .evalset_files import (
    EvalSetFileError,
    ParsedEvalSet,
    parse_eval_config,
    MAX_FILE_BYTES,
    parse_eval_set_file,
    simulator_config_json,
    user_simulator_config_json,
    validation_problems,
)
from .models import EvalSet

MAX_UPLOAD_BYTES = MAX_FILE_BYTES


def _agent_choices(blank: str | None = None) -> list[tuple[str, str]]:
    choices = [(name, name) for name in agent_names()]
    return ([("", blank)] if blank is not None else []) + choices


# ---- import -----------------------------------------------------------------


class ImportForm(forms.Form):
    file = forms.FileField(help_text=".evalset.json, .yaml, or a legacy .test.json")
    test_config = forms.FileField(required=False, help_text="optional test_config.json")
    app_name = forms.ChoiceField(required=False, label="Agent")
    replace = forms.BooleanField(required=False, help_text="replace the cases of an eval set with the same id")

    parsed: ParsedEvalSet
    metrics: Any = None  # the test_config's EvalMetrics (parse_eval_config)
    user_simulator_config: dict[str, Any] | None = None  # and its user_simulator_config, as JSON

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["app_name"].choices = _agent_choices(blank="(any agent)")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        self.parsed = _parse(upload, lambda content: parse_eval_set_file(filename=upload.name, content=content))
        return upload

    def clean_test_config(self) -> Any:
        upload = self.cleaned_data.get("test_config")
        if upload:
            config, self.metrics = _parse(upload, lambda content: parse_eval_config(content=content,
                                                                                     filename=upload.name))
            self.user_simulator_config = simulator_config_json(config)
        return upload


def _parse(upload: Any, parse: Any) -> Any:
    if upload.size > MAX_UPLOAD_BYTES:
        raise forms.ValidationError(f"{upload.name} is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.")
    try:
        return parse(upload.read())
    except EvalSetFileError as exc:
        raise forms.ValidationError([f"{exc.filename}: {problem}" for problem in exc.problems]) from exc


# ---- run --------------------------------------------------------------------
#
# Every metric of ADK's registry (`metrics.metrics_info()`), each with the
# options its criterion type has: the form builds ADK's test_config `criteria`
# and `metrics.eval_metrics` validates them with ADK's EvalConfig.

DETERMINISTIC, JUDGE, INFORMATIONAL, UNAVAILABLE = "deterministic", "judge", "informational", "unavailable"
GROUP_NOTES = {
    DETERMINISTIC: "No judge model of the run's: computed by ADK's evaluators.",
    JUDGE: "Asked of the judge model: the run's unless the metric names its own.",
    INFORMATIONAL: "ADK reports these for every case; they never pass or fail.",
}
GROUP_TITLES = {
    DETERMINISTIC: "Deterministic metrics",
    JUDGE: "LLM-as-judge metrics",
    INFORMATIONAL: "Informational (recorded for every run)",
    UNAVAILABLE: "Not available here",
}
RUBRIC_LINE = re.compile(r"^(?P<id>[A-Za-z0-9_.-]{1,64}):\s+(?P<text>\S.*)$")


@dataclass
class MetricRow:
    """One metric of the run form: ADK's info, its group and its bound fields."""

    info: MetricInfo
    group: str
    options: tuple[str, ...]
    fields: dict[str, Any] = field(default_factory=dict)
    unavailable: str = ""  # why it cannot run here (it needs Vertex AI): offered, but not to tick

    @property
    def chosen(self) -> bool:
        return "on" in self.fields and bool(self.fields["on"].value())

    @property
    def name(self) -> str:
        return self.info.metric_name

    @property
    def interval(self) -> str:
        interval = self.info.metric_value_info.interval
        return f"{interval.min_value:g}–{interval.max_value:g}" if interval else ""


def _metric_options(name: str) -> tuple[str, ...]:
    criterion = metrics.criterion_class(name)
    options = ["threshold"]
    if issubclass(criterion, ToolTrajectoryCriterion):
        options += ["match_type", "ignore_args"]
    if metrics.needs_rubrics(name):
        options.append("rubrics")
    if metrics.is_judge_metric(name):
        options += ["judge_model", "num_samples"]
    return tuple(options)


def _group(info: MetricInfo) -> str:
    if info.metric_name in metrics.INFORMATIONAL:
        return INFORMATIONAL
    return JUDGE if metrics.is_judge_metric(info.metric_name) else DETERMINISTIC


def _default_threshold(info: MetricInfo) -> float:
    default = _criterion_options(metrics.default_criteria().get(info.metric_name)).get("threshold")
    if default is not None:
        return float(default)
    if info.metric_name == state_metric.METRIC_NAME:
        return state_metric.DEFAULT_THRESHOLD
    interval = info.metric_value_info.interval
    if interval is None:
        return 1.0
    return round(interval.min_value + 0.8 * (interval.max_value - interval.min_value), 3)


class _PlainInput:
    """An `<input>` written by `format_html`, not by Django's widget templates: the run form has
    about forty (each metric's tick and options), and through the templates they were a sixth of
    the eval set page's CPU (about 7 of 44 ms). The same text as `input.html` and `attrs.html`
    write: type, name, value, then the attributes, a true one bare and a false one left out."""

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> str:
        widget = self.get_context(name, value, attrs)["widget"]  # type: ignore[attr-defined]
        written = [format_html(' type="{}" name="{}"', widget["type"], widget["name"])]
        if widget["value"] is not None:
            written.append(format_html(' value="{}"', widget["value"]))
        for key, given in widget["attrs"].items():
            if given is True:
                written.append(format_html(" {}", key))
            elif given is not False:
                written.append(format_html(' {}="{}"', key, given))
        return format_html("<input{}>", mark_safe("".join(written)))  # each part escaped above


class PlainCheckboxInput(_PlainInput, forms.CheckboxInput):
    pass


class PlainNumberInput(_PlainInput, forms.NumberInput):
    pass


class PlainTextInput(_PlainInput, forms.TextInput):
    pass


def _option_field(info: MetricInfo, option: str) -> forms.Field:
    if option == "threshold":
        interval = info.metric_value_info.interval
        return forms.FloatField(required=False, label="threshold", initial=_default_threshold(info),
                                min_value=interval.min_value if interval else None,
                                max_value=interval.max_value if interval else None, widget=PlainNumberInput)
    if option == "match_type":
        names = [m.name for m in ToolTrajectoryCriterion.MatchType]
        return forms.ChoiceField(required=False, label="match", choices=[(n, n) for n in names],
                                 initial=ToolTrajectoryCriterion.MatchType.EXACT.name)
    if option == "ignore_args":
        return forms.BooleanField(required=False, label="ignore args (compare tool names only)",
                                  widget=PlainCheckboxInput)
    if option == "rubrics":
        return forms.CharField(required=False, label="rubrics", widget=forms.Textarea(attrs={"rows": 3}),
                               help_text='one rubric a line; an id first is optional: "concise: The answer is short."')
    if option == "judge_model":
        return forms.CharField(required=False, max_length=255, label="judge model", widget=PlainTextInput,
                               help_text="blank: the run's judge model")
    return forms.IntegerField(required=False, label="samples", min_value=1, max_value=20, initial=1,
                              widget=PlainNumberInput, help_text="judge calls per invocation (ADK's num_samples)")


def parse_rubrics(text: str) -> list[dict[str, Any]]:
    """One rubric a line, `id: text` or just text (then the id is rubric_<n>), as ADK's Rubric JSON."""
    rubrics = []
    for n, line in enumerate((ln.strip() for ln in text.splitlines() if ln.strip()), start=1):
        match = RUBRIC_LINE.match(line)
        rubric_id, prop = (match["id"], match["text"]) if match else (f"rubric_{n}", line)
        rubrics.append({"rubric_id": rubric_id, "rubric_content": {"text_property": prop}})
    ids = [r["rubric_id"] for r in rubrics]
    if len(set(ids)) != len(ids):
        raise forms.ValidationError("Each rubric needs its own id.")
    return rubrics


def rubrics_text(rubrics: list[dict[str, Any]]) -> str:
    lines = []
    for rubric in rubrics if isinstance(rubrics, list) else []:
        if not isinstance(rubric, dict):
            continue
        content = rubric.get("rubric_content") or rubric.get("rubricContent") or {}
        text = content.get("text_property") or content.get("textProperty") or ""
        lines.append(f"{rubric.get('rubric_id') or rubric.get('rubricId')}: {text}")
    return "\n".join(lines)


class EvalIdsField(forms.MultipleChoiceField):
    """Case ids of one eval set, checked against the database for the ids posted only: a set may
    hold thousands of cases (its page lists them a page at a time), and choices would load them all."""

    eval_set: EvalSet | None = None

    def valid_value(self, value: Any) -> bool:
        return value in self._known

    def validate(self, value: Any) -> None:
        self._known = set(self.eval_set.cases.filter(eval_id__in=value).values_list("eval_id", flat=True)) \
            if self.eval_set is not None and value else set()
        super().validate(value)


class RunForm(forms.Form):
    app_name = forms.ChoiceField(label="Agent")
    scope = forms.ChoiceField(choices=[("all", "all cases"), ("selected", "selected cases")], initial="all",
                              widget=forms.RadioSelect)
    eval_ids = EvalIdsField(required=False, widget=forms.CheckboxSelectMultiple)
    judge_model = forms.CharField(required=False, max_length=255, label="Judge model",
                                  help_text="any model ADK can load (Gemini, LiteLLM names)")
    repeats = forms.IntegerField(min_value=1, max_value=50, initial=1)
    user_simulator_config = forms.CharField(
        required=False, label="User simulator", widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        help_text="ADK's user_simulator_config (test_config.json), as JSON, for conversation-scenario cases; "
                  "blank: ADK's LLM-backed simulator on the run's judge model")

    def __init__(self, *args: Any, eval_set: EvalSet, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.eval_set = eval_set
        self.eval_metrics: list[EvalMetric] = []
        self.fields["app_name"].choices = _agent_choices()
        self.fields["eval_ids"].eval_set = eval_set
        self.default_judge_model = judges.default_judge_model()
        self.fields["judge_model"].widget.attrs["placeholder"] = self.default_judge_model
        self.rows = [MetricRow(info, _group(info), _metric_options(info.metric_name),
                               unavailable=judges.metric_unavailable_reason(info.metric_name))
                     for info in metrics.metrics_info()]
        for row in self.rows:
            if row.group == INFORMATIONAL:
                continue
            # Disabled in the browser only: a crafted post still gets the check's one clear error.
            attrs = {"disabled": True, "title": row.unavailable} if row.unavailable else {}
            self.fields[self.key(row.name, "on")] = forms.BooleanField(
                required=False, label=row.name, widget=PlainCheckboxInput(attrs=attrs))
            for option in row.options:
                self.fields[self.key(row.name, option)] = _option_field(row.info, option)
        known = {r.name for r in self.rows if r.group != INFORMATIONAL}
        self.unknown_saved = sorted(name for name in eval_set.criteria or {} if name not in known)
        self.unavailable_saved = sorted(r.name for r in self.rows if r.unavailable and r.name in (eval_set.criteria or {}))
        if not self.is_bound:
            self.initial.update(self._initial_from_criteria(eval_set.criteria or metrics.default_criteria()))
            if eval_set.app_name:
                self.initial["app_name"] = eval_set.app_name
            if eval_set.user_simulator_config:
                self.initial["user_simulator_config"] = json.dumps(eval_set.user_simulator_config, indent=2)
        for row in self.rows:
            row.fields = {name: self[self.key(row.name, name)] for name in ("on", *row.options)
                          if self.key(row.name, name) in self.fields}

    def general_fields(self) -> list[Any]:
        return [self[name] for name in ("app_name", "scope", "eval_ids", "judge_model", "repeats",
                                        "user_simulator_config")]

    @staticmethod
    def key(metric_name: str, option: str) -> str:
        return f"{metric_name}__{option}"

    def groups(self) -> list[tuple[str, str, str, list[MetricRow]]]:
        def group_of(row: MetricRow) -> str:
            return UNAVAILABLE if row.unavailable else row.group

        def note(group: str, rows: list[MetricRow]) -> str:
            # Every metric that cannot run here is a Vertex one: one reason, said once for the group.
            return f"Each is {rows[0].unavailable}." if group == UNAVAILABLE else GROUP_NOTES[group]

        grouped = {g: [r for r in self.rows if group_of(r) == g] for g in (DETERMINISTIC, JUDGE, INFORMATIONAL, UNAVAILABLE)}
        return [(group, GROUP_TITLES[group], note(group, rows), rows) for group, rows in grouped.items() if rows]

    def chosen_names(self) -> list[str]:
        """The metrics ticked as the form shows them (before or after a post)."""
        return [row.name for row in self.rows if row.chosen]

    def metrics_need_attention(self) -> bool:
        """Whether the metric list must open: an error in it, or saved criteria left out."""
        keys = {self.key(row.name, option) for row in self.rows for option in ("on", *row.options)}
        return bool(self.unknown_saved or self.unavailable_saved or keys & set(self.errors))

    def _initial_from_criteria(self, criteria: dict[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        for row in self.rows:
            if row.name not in criteria or row.group == INFORMATIONAL or row.unavailable:
                continue
            initial[self.key(row.name, "on")] = True
            for option, value in _criterion_options(criteria[row.name]).items():
                if option in row.options:
                    initial[self.key(row.name, option)] = value
        return initial

    def chosen(self) -> list[MetricRow]:
        data = self.cleaned_data
        return [r for r in self.rows if r.group != INFORMATIONAL and data.get(self.key(r.name, "on"))]

    def clean_judge_model(self) -> str:
        name = self.cleaned_data["judge_model"].strip()
        if name:
            _check_model(name)
        return name

    def clean_user_simulator_config(self) -> dict[str, Any] | None:
        """ADK's user_simulator_config as ADK reads it (its own model checks every field), or None."""
        text = self.cleaned_data["user_simulator_config"].strip()
        if not text:
            return None
        raw = _json_field(text)
        if not isinstance(raw, dict):
            raise forms.ValidationError("A JSON object is needed, as in test_config.json.")
        try:
            return user_simulator_config_json(raw)
        except EvalSetFileError as exc:
            raise forms.ValidationError(list(exc.problems)) from exc

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("scope") == "selected" and not data.get("eval_ids"):
            self.add_error("eval_ids", "Select at least one case, or run all cases.")
        chosen = self.chosen()
        self._forget_errors_of_unchosen(chosen)
        if not chosen:
            self.add_error(None, "Choose at least one metric.")
        criteria = {}
        for row in chosen:
            criterion = self._criterion(row)
            if criterion is not None:
                criteria[row.name] = criterion
        if self.errors:
            return data
        try:
            self.eval_metrics = metrics.eval_metrics(criteria, judge_model=data.get("judge_model", ""))
        except metrics.MetricConfigError as exc:
            self.add_error(self._field_of(exc.field), str(exc))
        return data

    def _forget_errors_of_unchosen(self, chosen: list[MetricRow]) -> None:
        """A metric left unticked is not run: what its options say does not matter."""
        names = {row.name for row in chosen}
        for row in self.rows:
            if row.name not in names:
                for option in row.options:
                    self._errors.pop(self.key(row.name, option), None)
                    self.cleaned_data.pop(self.key(row.name, option), None)

    def _criterion(self, row: MetricRow) -> float | dict[str, Any] | None:
        """This metric's entry of ADK's criteria; None (and a field error) when an option is wrong."""
        value = lambda option: self.cleaned_data.get(self.key(row.name, option))  # noqa: E731
        threshold = value("threshold")
        if threshold is None:
            self.add_error(self.key(row.name, "threshold"), "A threshold is required for a chosen metric.")
            return None
        criterion: dict[str, Any] = {"threshold": threshold}
        if "match_type" in row.options:
            criterion.update(match_type=value("match_type") or ToolTrajectoryCriterion.MatchType.EXACT.name,
                             ignore_args=bool(value("ignore_args")))
        if "rubrics" in row.options:
            try:
                criterion["rubrics"] = parse_rubrics(value("rubrics") or "")
            except forms.ValidationError as exc:
                self.add_error(self.key(row.name, "rubrics"), exc)
                return None
            if not criterion["rubrics"]:
                self.add_error(self.key(row.name, "rubrics"), f"{row.name} needs at least one rubric.")
                return None
        if "judge_model" in row.options:
            judge = (value("judge_model") or "").strip()
            if judge:
                try:
                    _check_model(judge)
                except forms.ValidationError as exc:
                    self.add_error(self.key(row.name, "judge_model"), exc)
                    return None
            # Without a model of its own, `metrics.eval_metrics` gives the metric the run's judge.
            options = {"judge_model": judge} if judge else {}
            criterion["judge_model_options"] = {**options, "num_samples": value("num_samples") or 1}
        return threshold if len(criterion) == 1 else criterion

    def _field_of(self, error_field: str | None) -> str | None:
        """The form field a MetricConfigError's field names (`criteria.<metric>[.<option>...]`); None: the form's."""
        parts = (error_field or "").split(".")
        if parts[0] == "judge_model":
            return "judge_model"
        row = next((r for r in self.rows if parts[0] == "criteria" and parts[1:2] == [r.name]), None)
        if row is None or row.group == INFORMATIONAL:
            return None
        option = next((o for o in reversed(parts[2:]) if o in row.options), None)
        return self.key(row.name, option or "on")

    def chosen_eval_ids(self) -> list[str]:
        return list(self.cleaned_data["eval_ids"]) if self.cleaned_data["scope"] == "selected" else []


def _check_model(name: str) -> None:
    try:
        judges.check_model(name)
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from exc


def _criterion_options(criterion: Any) -> dict[str, Any]:
    """A stored criteria entry (a threshold, or a criterion dict in either spelling) as form options."""
    if isinstance(criterion, (int, float)):
        return {"threshold": float(criterion)}
    if not isinstance(criterion, dict):
        return {}
    get = lambda *names: next((criterion[n] for n in names if n in criterion), None)  # noqa: E731
    options: dict[str, Any] = {"threshold": get("threshold")}
    match_type = get("match_type", "matchType")
    if match_type is not None:
        try:
            options["match_type"] = ToolTrajectoryCriterion.model_validate(
                {"threshold": 0, "match_type": match_type}).match_type.name
        except ValidationError:
            pass
    options["ignore_args"] = bool(get("ignore_args", "ignoreArgs"))
    if rubrics := get("rubrics"):
        options["rubrics"] = rubrics_text(rubrics)
    judge = get("judge_model_options", "judgeModelOptions") or {}
    if judge_model := judge.get("judge_model") or judge.get("judgeModel"):
        options["judge_model"] = judge_model
    if samples := judge.get("num_samples") or judge.get("numSamples"):
        options["num_samples"] = samples
    return {k: v for k, v in options.items() if v is not None}


# ---- add a session to an eval set -------------------------------------------


FINAL_STATE_HELP = ("a JSON object: every key (plain, app: or user:) must equal the session's state after the "
                    "last turn for final_session_state_match to pass; {} expects nothing")


class AddSessionForm(forms.Form):
    """A session (up to event #`at`, when given) as a case; from an event, with the
    state as of that event proposed as the expected final state, editable."""

    eval_set = forms.ModelChoiceField(queryset=EvalSet.objects.none(), required=False, empty_label="(new eval set)")
    new_eval_set_id = forms.CharField(required=False, max_length=255, label="new eval set id")
    eval_id = forms.CharField(max_length=255, label="case id")
    at = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    final_session_state = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}), required=False, label="expected final state",
        help_text=FINAL_STATE_HELP,
    )

    def clean_final_session_state(self) -> dict[str, Any]:
        return state_object(self.cleaned_data.get("final_session_state"), final=True)

    def __init__(self, *args: Any, app_name: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.app_name = app_name
        self.fields["eval_set"].queryset = selectors.eval_sets_for_app(app_name)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("eval_set") and not (data.get("new_eval_set_id") or "").strip():
            raise forms.ValidationError("Pick an eval set or name a new one.")
        return data


# ---- editing a case ---------------------------------------------------------


class CaseForm(forms.Form):
    eval_id = forms.CharField(max_length=255)
    user_id = forms.CharField(max_length=255, required=False, help_text="the session's user id when the case runs")
    state = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                            help_text="initial session state, a JSON object (app:/user: prefixes allowed)")
    final_session_state = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Expected final state",
        help_text=FINAL_STATE_HELP,
    )

    def clean_state(self) -> dict[str, Any]:
        return state_object(self.cleaned_data.get("state"), final=False)

    def clean_final_session_state(self) -> dict[str, Any]:
        return state_object(self.cleaned_data.get("final_session_state"), final=True)


def state_object(text: str | None, *, final: bool) -> dict[str, Any]:
    """A state typed as JSON ({} when empty): an object of storable values within
    ADKUI_MAX_STATE_BYTES, each key (without its app:/user: prefix) fitting its column.
    A final state cannot expect `temp:` keys: ADK never stores them."""
    text = (text or "").strip()
    if not text:
        return {}
    what = "The expected final state" if final else "The state"
    value = _json_field(text)
    if not isinstance(value, dict):
        raise forms.ValidationError(f'{what} must be a JSON object, like {{"key": "value"}}.')
    problems = []
    try:
        limits.check_state_size(value, "state")
    except limits.InputError as exc:
        problems.append(f"{what} {exc.message}")
    for key in value:
        bare = key.removeprefix(State.APP_PREFIX).removeprefix(State.USER_PREFIX)
        try:
            limits.check_id(bare, f"key {key[:60]!r}")
        except limits.InputError as exc:
            problems.append(str(exc))
        if final and key.startswith(State.TEMP_PREFIX):
            problems.append(f"key {key[:60]!r}: temp: keys are never stored, so no session can end with one.")
    if problems:
        raise forms.ValidationError(problems)
    return value


class TurnForm(forms.Form):
    user_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label="user says")
    expected_response = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    expected_tool_calls = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False,
        help_text='JSON list: [{"name": "plan_trip", "args": {"city": "Paris"}}]',
    )

    def clean_expected_tool_calls(self) -> list[dict[str, Any]]:
        text = (self.cleaned_data.get("expected_tool_calls") or "").strip()
        calls = _json_field(text) if text else []
        if not isinstance(calls, list):
            raise forms.ValidationError("Expected a JSON list of calls.")
        problems = []
        for i, item in enumerate(calls):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
                problems.append(f"[{i}].name: a non-empty string is required")
            elif not isinstance(item.get("args", {}), dict):
                problems.append(f"[{i}].args: must be a JSON object")
            elif set(item) - {"name", "args"}:
                problems.append(f"[{i}]: unknown keys {sorted(set(item) - {'name', 'args'})}; use name and args")
        if problems:
            raise forms.ValidationError(problems)
        return [{"name": c["name"].strip(), "args": c.get("args", {})} for c in calls]


TurnFormSet = forms.formset_factory(TurnForm, extra=0)


def _json_field(text: str) -> Any:
    try:
        return limits.loads(text, "value")
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"Not valid JSON (line {exc.lineno} column {exc.colno}): {exc.msg}") from exc
    except limits.InputError as exc:
        raise forms.ValidationError(exc.message) from exc


def case_initial(case: AdkEvalCase) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Initial data of CaseForm and of each TurnForm, from an ADK EvalCase."""
    session_input = case.session_input
    head = {
        "eval_id": case.eval_id,
        "user_id": session_input.user_id if session_input else "",
        "state": json.dumps(session_input.state, indent=2, ensure_ascii=False) if session_input else "",
        "final_session_state": state_text(case.final_session_state),
    }
    turns = [
        {
            "user_text": metrics.response_text(turn.user_content),
            "expected_response": metrics.response_text(turn.final_response),
            "expected_tool_calls": _calls_text(metrics.tool_calls(turn)),
        }
        for turn in case.conversation or []
    ]
    return head, turns


def state_text(state: dict[str, Any] | None) -> str:
    """A state for a textarea: "" for none."""
    return json.dumps(state, indent=2, ensure_ascii=False, sort_keys=True) if state else ""


def _calls_text(calls: list[types.FunctionCall]) -> str:
    """One call a line: easy to read, and to edit one argument of."""
    if not calls:
        return "[]"
    lines = [json.dumps({"name": c.name, "args": c.args or {}}, ensure_ascii=False) for c in calls]
    return "[\n  " + ",\n  ".join(lines) + "\n]"


def edited_case(original: dict[str, Any], head: dict[str, Any], turns: list[dict[str, Any]], app_name: str
                ) -> AdkEvalCase:
    """The stored case with the form's changes applied, validated by ADK's EvalCase.

    Only what changed is rewritten, so an imported case keeps every field the
    form does not show (intermediate responses, rubrics, usage...).
    Raises forms.ValidationError with ADK's field paths.
    """
    data = copy.deepcopy(original)
    data["eval_id"] = head["eval_id"].strip()
    _apply_session_input(data, head, app_name)
    if head.get("final_session_state", {}) != (original.get("final_session_state") or {}):
        data["final_session_state"] = head.get("final_session_state") or {}
    current = AdkEvalCase.model_validate(original)
    for i, (turn, new) in enumerate(zip(current.conversation or [], turns)):
        data["conversation"][i] = _edited_turn(turn, new)
    try:
        return AdkEvalCase.model_validate(data)
    except ValidationError as exc:
        raise forms.ValidationError(validation_problems(exc)) from exc


def _apply_session_input(data: dict[str, Any], head: dict[str, Any], app_name: str) -> None:
    user_id, state = (head.get("user_id") or "").strip(), head.get("state") or {}
    session_input = data.get("session_input")
    if session_input is None and not user_id and not state:
        return
    session_input = dict(session_input or {"app_name": app_name})
    session_input.update(user_id=user_id, state=state)
    data["session_input"] = session_input


def _edited_turn(turn: Invocation, new: dict[str, Any]) -> dict[str, Any]:
    edited = turn.model_copy(deep=True)
    if new["user_text"] != metrics.response_text(turn.user_content):
        others = [p for p in turn.user_content.parts or [] if not p.text]
        edited.user_content = types.Content(role="user", parts=[types.Part(text=new["user_text"]), *others])
    if new["expected_response"] != metrics.response_text(turn.final_response):
        edited.final_response = types.Content(role="model", parts=[types.Part(text=new["expected_response"])])
    old_calls = [{"name": c.name, "args": c.args or {}} for c in metrics.tool_calls(turn)]
    if new["expected_tool_calls"] != old_calls:
        keep = turn.intermediate_data if isinstance(turn.intermediate_data, IntermediateData) else IntermediateData()
        edited.intermediate_data = keep.model_copy(update={
            "tool_uses": [types.FunctionCall(name=c["name"], args=c["args"]) for c in new["expected_tool_calls"]],
        })
    return edited.model_dump(mode="json", exclude_none=True)
