"""What a client may send: the limits every input is held to, wherever it enters.

Text must be storable on every database (no U+0000, which PostgreSQL refuses,
and no lone surrogate, which has no UTF-8 form), ids must fit their columns,
numbers must be finite, JSON must not nest without end, and timestamps must be
ones a page can show. A breach raises `InputError` naming the field, which the
API answers as a 400 `{field: [message]}` and forms show beside the field.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings

MAX_ID_CHARS = 255  # the CharField columns ids are stored in
# `check_id`'s rule as a schema's pattern: some character besides whitespace, and no U+0000.
NON_BLANK_TEXT = r"^[^\x00]*[^\s\x00][^\x00]*$"
# Seconds since the epoch: 0 (1970) up to the last second of year 9999, the
# largest a datetime holds. A milliseconds epoch (1.7e12) falls outside.
MIN_TIMESTAMP, MAX_TIMESTAMP = 0.0, 253402300799.0


class InputError(ValueError):
    """A value a client sent that is refused whole; `field` names where it was."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class TooLargeError(InputError):
    """An input over its size cap (HTTP 413)."""


def check_text(value: str, field: str) -> None:
    if "\x00" in value:
        raise InputError(field, "contains the character U+0000 (NUL), which cannot be stored; remove it.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(field, "contains a lone surrogate (not valid Unicode text).") from None


def check_id(value: Any, field: str, *, required: bool = True) -> None:
    """An id stored in a column: text, within the column's length."""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(field, "must be a non-empty string." if required else "must be a string.")
    check_text(value, field)
    if len(value) > MAX_ID_CHARS:
        raise InputError(field, f"may be at most {MAX_ID_CHARS} characters; this one has {len(value)}.")


def check_timestamp(value: Any, field: str = "timestamp") -> None:
    if not isinstance(value, (int, float)) or not MIN_TIMESTAMP <= value <= MAX_TIMESTAMP:
        raise InputError(field, f"must be seconds since 1970 between {MIN_TIMESTAMP:.0f} and "
                                f"{MAX_TIMESTAMP:.0f} (year 9999); got {value!r}.")


def max_json_depth() -> int:
    return int(getattr(settings, "ADKUI_MAX_JSON_DEPTH", 100))


def check_json_value(value: Any, field: str, *, max_depth: int | None = None) -> None:
    """Every string (keys too) storable, every number finite, nesting within the cap.

    Iterative, so a value nested deeper than Python's recursion limit is
    refused instead of crashing whatever walks it next. The error names where in
    `value` the breach is (`field.key[2]`; the API's whole body, "body", is left out:
    `state.note`).
    """
    limit = max_json_depth() if max_depth is None else max_depth
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            check_text(item, _at(field, path))
        elif isinstance(item, float) and not math.isfinite(item):
            raise InputError(_at(field, path), "contains a number JSON cannot hold (infinite or not a number).")
        elif isinstance(item, (dict, list)):
            if depth > limit:
                raise InputError(_at(field, path), f"nests deeper than {limit} levels.")
            if isinstance(item, dict):
                for key, sub in item.items():
                    check_text(str(key), _at(field, path))
                    stack.append((sub, depth + 1, f"{path}.{key}"))
            else:
                stack.extend((sub, depth + 1, f"{path}[{i}]") for i, sub in enumerate(item))


_STEP = re.compile(r"\.[^.\[]*|\[\d+\]")


def _at(field: str, path: str, steps: int = 6) -> str:
    """`field` followed by `path` (its first `steps` keys and indexes: a deep one ends in "…")."""
    if not path:
        return field
    found = _STEP.findall(path)
    if len(found) > steps:
        path = "".join(found[:steps]) + "…"
    return path.removeprefix(".") if field == "body" else field + path


def loads(text: str | bytes, field: str = "body") -> Any:
    """`json.loads`, refusing what no database can store and what nests without end. NaN,
    Infinity and numbers too large for a float (1e400) parse as non-finite floats, which the
    walk then refuses, naming where they were."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError(field, f"nests deeper than {max_json_depth()} levels.") from None
    check_json_value(value, field)
    return value


def dumps(value: Any, field: str) -> str:
    """`value` as the JSON text to store, refused whole if any database would refuse it."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise InputError(field, "contains a number JSON cannot hold (infinite or not a number).") from None
    except RecursionError:
        raise InputError(field, "nests too deeply to store.") from None
    # Control characters are escaped, so a NUL shows as the escape sequence.
    if "\\u0000" in text:
        raise InputError(field, "contains the character U+0000 (NUL), which cannot be stored; remove it.")
    check_text(text, field)  # lone surrogates pass json.dumps but have no UTF-8 form
    return text


def json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON (what a cap on stored JSON counts)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8", "replace"))


def check_state_size(value: Any, field: str) -> None:
    """State a client sends at once (a new session's, a delta) within ADKUI_MAX_STATE_BYTES of JSON."""
    limit = int(settings.ADKUI_MAX_STATE_BYTES)
    if value and (size := json_size(value)) > limit:
        raise TooLargeError(field, f"may be at most {limit} bytes of JSON (ADKUI_MAX_STATE_BYTES); this is {size}.")
