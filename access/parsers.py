"""The API's JSON parser: DRF's, holding every body to `limits`."""
from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from .limits import InputError, loads


class LimitedJSONParser(JSONParser):
    """Refuses NUL, lone surrogates, non-finite numbers and runaway nesting as a
    400 naming the field, where DRF's parser would pass them on (or crash)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error - the body is not UTF-8: {exc}") from exc
        try:
            return loads(text)
        except InputError as exc:
            raise ValidationError({exc.field: [exc.message]}) from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
