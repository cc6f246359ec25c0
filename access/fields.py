"""Body fields that take a JSON value only of their own type.

DRF's fields convert what they are given (an integer `sessionId` becomes "12345",
`"yes"` a boolean), so a client's mistake was stored as something it never sent
and the schema's types did not hold. Query-string fields stay DRF's: there every
value arrives as text.
"""
from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

from .limits import NON_BLANK_TEXT

# An id or name that must not be blank (DRF trims it, `check_id` strips it), as a validator the
# schema states as its pattern.
NON_BLANK = RegexValidator(NON_BLANK_TEXT, "Must have a character besides whitespace, and no U+0000.")


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string (JSON text); got {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid", kind=json_kind(data))
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false; got {kind}."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", kind=json_kind(data))
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be an integer (a JSON number); got {kind}."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or (isinstance(data, float) and not data.is_integer()):
            self.fail("invalid", kind=json_kind(data))
        return super().to_internal_value(int(data))


def json_kind(value: Any) -> str:
    """A value's JSON type, as a client would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
