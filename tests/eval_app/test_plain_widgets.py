"""The run form's plain inputs write the element Django's widget templates write."""
from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django import forms

from eval_app.forms import PlainCheckboxInput, PlainNumberInput, PlainTextInput


def element(html: str) -> tuple[str, dict[str, str | None]]:
    found: list[tuple[str, dict[str, str | None]]] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, dict(attrs)))

    Parser().feed(html)
    (only,) = found
    return only


class Both(forms.Form):
    tick = forms.BooleanField(required=False, widget=forms.CheckboxInput(attrs={"disabled": True, "title": 'a "b" <c>'}))
    plain_tick = forms.BooleanField(required=False, widget=PlainCheckboxInput(attrs={"disabled": True, "title": 'a "b" <c>'}))
    threshold = forms.FloatField(required=False, min_value=0.0, max_value=1.0)
    plain_threshold = forms.FloatField(required=False, min_value=0.0, max_value=1.0, widget=PlainNumberInput)
    samples = forms.IntegerField(min_value=1, max_value=20)
    plain_samples = forms.IntegerField(min_value=1, max_value=20, widget=PlainNumberInput)
    model = forms.CharField(required=False, max_length=255)
    plain_model = forms.CharField(required=False, max_length=255, widget=PlainTextInput)


CASES: list[dict[str, Any]] = [
    {},  # unbound, no initial
    {"tick": True, "threshold": 0.8, "samples": 3, "model": 'gemini "x" & <y>'},
    {"tick": False, "threshold": 0, "samples": 1, "model": ""},
]


@pytest.mark.parametrize("values", CASES)
@pytest.mark.parametrize("name", ["tick", "threshold", "samples", "model"])
def test_a_plain_input_is_the_element_the_template_writes(name: str, values: dict[str, Any]) -> None:
    initial = {**values, **{f"plain_{k}": v for k, v in values.items()}}
    unbound = Both(initial=initial)
    bound = Both(data={k: ("on" if v is True else v) for k, v in initial.items() if v is not False})
    for form in (unbound, bound):
        plain = str(form[f"plain_{name}"]).replace("plain_", "")  # its name, id and aria attributes
        assert plain == str(form[name])
        assert element(plain)[0] == "input"
