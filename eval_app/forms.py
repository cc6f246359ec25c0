"""Forms: import, run, add-from-session and case editing, each validated with ADK's models."""
from __future__ import annotations

import copy
import json
from typing import Any

from django import forms
from django.conf import settings
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.genai import types
from pydantic import ValidationError

from access import limits

from sessions_app.runtime import agent_names

from . import metrics, selectors
from .evalset_files import (
    EvalSetFileError,
    ParsedEvalSet,
    parse_eval_set_file,
    parse_test_config,
    specs_from_stored,
    validation_problems,
)
from .metrics import MetricSpec
from .models import EvalSet

MAX_UPLOAD_BYTES = 20 * 1024 * 1024


def _agent_choices(blank: str | None = None) -> list[tuple[str, str]]:
    choices = [(name, name) for name in agent_names()]
    return ([("", blank)] if blank is not None else []) + choices


def concurrency_setting() -> int:
    return max(1, int(getattr(settings, "ADKUI_EVAL_CONCURRENCY", 1)))


# ---- import -----------------------------------------------------------------


class ImportForm(forms.Form):
    file = forms.FileField(help_text=".evalset.json, .yaml, or a legacy .test.json")
    test_config = forms.FileField(required=False, help_text="optional test_config.json")
    app_name = forms.ChoiceField(required=False, label="Agent")
    replace = forms.BooleanField(required=False, help_text="replace the cases of an eval set with the same id")

    parsed: ParsedEvalSet
    specs: list[MetricSpec] | None = None

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
            self.specs = _parse(upload, lambda content: parse_test_config(content=content, filename=upload.name))
        return upload


def _parse(upload: Any, parse: Any) -> Any:
    if upload.size > MAX_UPLOAD_BYTES:
        raise forms.ValidationError(f"{upload.name} is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.")
    try:
        return parse(upload.read())
    except EvalSetFileError as exc:
        raise forms.ValidationError([f"{exc.filename}: {problem}" for problem in exc.problems]) from exc


# ---- run --------------------------------------------------------------------


class RunForm(forms.Form):
    app_name = forms.ChoiceField(label="Agent")
    scope = forms.ChoiceField(choices=[("all", "all cases"), ("selected", "selected cases")], initial="all",
                              widget=forms.RadioSelect)
    eval_ids = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    trajectory = forms.BooleanField(required=False, initial=True, label=metrics.TRAJECTORY)
    trajectory_threshold = forms.FloatField(min_value=0, max_value=1, initial=1.0, label="threshold")
    match_type = forms.ChoiceField(choices=[(m, m) for m in metrics.MATCH_TYPES], initial=metrics.EXACT)
    ignore_args = forms.BooleanField(required=False, label="ignore args")
    response = forms.BooleanField(required=False, initial=True, label=metrics.RESPONSE_MATCH)
    response_threshold = forms.FloatField(min_value=0, max_value=1, initial=0.8, label="threshold")
    repeats = forms.IntegerField(min_value=1, max_value=50, initial=1)

    def __init__(self, *args: Any, eval_set: EvalSet, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.eval_set = eval_set
        self.fields["app_name"].choices = _agent_choices()
        self.fields["eval_ids"].choices = [(i, i) for i in selectors.eval_case_ids(eval_set)]
        if not self.is_bound:
            self.initial.update(_initial_from_specs(specs_from_stored(eval_set.criteria)))
            if eval_set.app_name:
                self.initial["app_name"] = eval_set.app_name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and not (data.get("trajectory") or data.get("response")):
            raise forms.ValidationError("Choose at least one metric.")
        if data.get("scope") == "selected" and not data.get("eval_ids"):
            self.add_error("eval_ids", "Select at least one case, or run all cases.")
        return data

    def specs(self) -> list[MetricSpec]:
        data = self.cleaned_data
        specs = []
        if data["trajectory"]:
            specs.append(MetricSpec(metrics.TRAJECTORY, data["trajectory_threshold"], data["match_type"],
                                    data["ignore_args"]))
        if data["response"]:
            specs.append(MetricSpec(metrics.RESPONSE_MATCH, data["response_threshold"]))
        return specs

    def chosen_eval_ids(self) -> list[str]:
        return list(self.cleaned_data["eval_ids"]) if self.cleaned_data["scope"] == "selected" else []


def _initial_from_specs(specs: list[MetricSpec]) -> dict[str, Any]:
    by_name = {s.metric_name: s for s in specs}
    initial: dict[str, Any] = {"trajectory": metrics.TRAJECTORY in by_name, "response": metrics.RESPONSE_MATCH in by_name}
    if trajectory := by_name.get(metrics.TRAJECTORY):
        initial.update(trajectory_threshold=trajectory.threshold, match_type=trajectory.match_type,
                       ignore_args=trajectory.ignore_args)
    if response := by_name.get(metrics.RESPONSE_MATCH):
        initial["response_threshold"] = response.threshold
    return initial


# ---- add a session to an eval set -------------------------------------------


class AddSessionForm(forms.Form):
    eval_set = forms.ModelChoiceField(queryset=EvalSet.objects.none(), required=False, empty_label="(new eval set)")
    new_eval_set_id = forms.CharField(required=False, max_length=255, label="new eval set id")
    eval_id = forms.CharField(max_length=255, label="case id")

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

    def clean_state(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("state") or "").strip()
        if not text:
            return {}
        value = _json_field(text)
        if not isinstance(value, dict):
            raise forms.ValidationError("The state must be a JSON object.")
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
