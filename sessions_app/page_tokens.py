"""Keyset page tokens: a list position (the values of a row's sort key) as an opaque URL-safe string.

The API's paged session list and the session browser's links carry one; a
token names where a page starts, so no page scans past the rows before it.
"""
from __future__ import annotations

import base64
import binascii
import json
from typing import Any


def encode(values: list[Any] | tuple[Any, ...]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values)).encode()).decode()


def decode(token: str) -> list[Any]:
    """The values `encode` wrote; ValueError for any string it did not write."""
    try:
        values = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError, binascii.Error, UnicodeError) as exc:
        raise ValueError(token) from exc
    if not isinstance(values, list):
        raise ValueError(token)
    return values
