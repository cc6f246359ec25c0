"""The chat form of the session page."""
from __future__ import annotations

from typing import Any

from django import forms

from sessions_app.forms import parse_state_json


class ChatForm(forms.Form):
    message = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Message the agent…"}))
    state_delta = forms.CharField(
        required=False, label="State delta (JSON, optional)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"user:tier": "gold"}'}),
    )
    streaming = forms.BooleanField(required=False, initial=True, label="stream tokens")
    max_llm_calls = forms.IntegerField(required=False, min_value=1, max_value=1000, label="max LLM calls")

    def clean_state_delta(self) -> dict[str, Any]:
        return parse_state_json(self.cleaned_data.get("state_delta"), "The state delta")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        resuming = bool(self.data.get("invocation_id"))
        if not resuming and not (data.get("message") or "").strip() and not data.get("state_delta"):
            raise forms.ValidationError("Write a message (or give a state delta).")
        return data
