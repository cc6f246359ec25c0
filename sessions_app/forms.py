from __future__ import annotations

import json
from typing import Any

from django import forms

from access import limits

from .scopes import StateValueError, json_safe_state


def parse_state_json(raw: str | None, what: str) -> dict[str, Any]:
    """A JSON object of storable state values typed into a form ({} when empty)."""
    raw = (raw or "").strip()
    if not raw:
        return {}
    try:
        value = limits.loads(raw, what)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from exc
    except limits.InputError as exc:
        raise forms.ValidationError(str(exc)) from exc
    if not isinstance(value, dict):
        raise forms.ValidationError(f'{what} must be a JSON object, like {{"key": "value"}}.')
    try:
        limits.check_state_size(value, what)
    except limits.InputError as exc:
        raise forms.ValidationError(str(exc)) from exc
    try:
        json_safe_state(value)
    except StateValueError as exc:
        raise forms.ValidationError(str(exc)) from exc
    return value


class SessionCreateForm(forms.Form):
    user_id = forms.CharField(max_length=255, initial="user")
    session_id = forms.CharField(max_length=255, required=False, help_text="Leave empty for a generated id.")
    state = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": '{"user:name": "Ada", "topic": "travel"}'}),
        help_text="Initial state as a JSON object; app: and user: keys go to their scopes, temp: keys are dropped.",
    )

    def clean_user_id(self) -> str:
        value = self.cleaned_data["user_id"].strip()
        if not value:
            raise forms.ValidationError("A user id is required.")
        return value

    def clean_state(self) -> dict[str, Any]:
        return parse_state_json(self.cleaned_data.get("state"), "The initial state")
