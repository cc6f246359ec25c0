"""The chat form of the session page."""
from __future__ import annotations

from typing import Any

from django import forms

from sessions_app.forms import parse_state_json
from sessions_app.scopes import split_delta

# The UI's default bound on model calls per run. Lower than ADK's own default
# (RunConfig.max_llm_calls: 500, or ADK_MAX_LLM_CALLS) on purpose: in a dev UI
# an agent stuck in a tool loop should stop after a screenful of calls, and
# the field shows the bound so nobody is surprised by it.
DEFAULT_MAX_LLM_CALLS = 25
MAX_LLM_CALLS_LIMIT = 1000
_MAX_LLM_CALLS_ERROR = f"max LLM calls must be a whole number from 1 to {MAX_LLM_CALLS_LIMIT}."

# The run options a user picks once and expects to stay picked (see chat.py).
OPTION_FIELDS = ("streaming", "max_llm_calls", "keep_running")


class ChatForm(forms.Form):
    message = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Message the agent…"}))
    state_delta = forms.CharField(
        required=False, label="State delta (JSON, optional)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"user:tier": "gold"}'}),
    )
    streaming = forms.BooleanField(required=False, initial=True, label="stream tokens")
    max_llm_calls = forms.IntegerField(
        min_value=1, max_value=MAX_LLM_CALLS_LIMIT, initial=DEFAULT_MAX_LLM_CALLS, label="max LLM calls",
        error_messages={key: _MAX_LLM_CALLS_ERROR for key in ("required", "invalid", "min_value", "max_value")},
    )
    keep_running = forms.BooleanField(required=False, initial=False, label="keep running when I leave")

    def clean_state_delta(self) -> dict[str, Any]:
        return parse_state_json(self.cleaned_data.get("state_delta"), "The state delta")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        message = (data.get("message") or "").strip()
        if self.resuming or message or "state_delta" not in data:
            return data  # a bad state delta has its own error already
        if not data["state_delta"]:
            raise forms.ValidationError("Write a message (or give a state delta).")
        if not split_delta(data["state_delta"]):
            self.add_error("state_delta", "temp: keys live only during a run and are never stored, "
                                          "so a state delta alone must set at least one other key.")
        return data

    @property
    def resuming(self) -> bool:
        return bool(self.data.get("invocation_id"))

    def state_only(self) -> bool:
        """A valid send with no message that only changes state: no run, one state-update event."""
        return not self.resuming and not self.cleaned_data["message"].strip() and bool(self.cleaned_data["state_delta"])

    def options(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in OPTION_FIELDS}
