"""Keyset page tokens: a list position (the values of a row's sort key) as an opaque URL-safe string.

The API's paged session list and the session browser's links carry one; a
token names where a page starts, so no page scans past the rows before it.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db.models import F, Model, Q, QuerySet

Row = TypeVar("Row", bound=Model)
# The response header of an API list paged by `page_size`: the `page_token` of the next page.
NEXT_PAGE_HEADER = "X-Next-Page-Token"


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


@dataclass(frozen=True)
class Page(Generic[Row]):
    """One keyset page: its rows, and the token of the page after it ("" on the last)."""

    rows: list[Row]
    next_token: str


def keyset_page(rows: QuerySet[Row], *, order: tuple[str, ...], size: int, token: str | None = None) -> Page[Row]:
    """The `size` rows of `rows` in `order` after the position `token` names (the first ones
    without). `order` names non-null columns, `-` for descending, the last one unique (the pk, or
    a column unique with those before it), so every row has one position and no page repeats or
    skips a row. ValueError for a token that is not a position of this order."""
    keys = {f"page_key_{i}": F(field.removeprefix("-")) for i, field in enumerate(order)}
    ordered = rows.annotate(**keys).order_by(*order)
    if token:
        ordered = ordered.filter(past(order, position(token, len(order))))
    found = list(ordered[:size + 1])
    found, more = found[:size], len(found) > size
    last = [getattr(found[-1], key) for key in keys] if more else None
    return Page(found, encode(last) if last else "")


def position(token: str, width: int) -> list[Any]:
    """The values of a keyset position of `width` columns; ValueError for anything else."""
    values = decode(token)
    if len(values) != width or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(token)
    return values


def past(order: tuple[str, ...], values: list[Any]) -> Q:
    """Rows past `values` in `order`: level on the first columns and past on the next one. The
    bound on the first column alone, redundant, lets an index on it seek to the position.
    (`keyset_page` pages model rows by it; a list of grouped rows may filter by it too.)"""
    past = Q()
    for i, field in enumerate(order):
        level = Q(**{order[j].removeprefix("-"): values[j] for j in range(i)})
        past |= level & Q(**{f"{field.removeprefix('-')}__{'lt' if field.startswith('-') else 'gt'}": values[i]})
    first = order[0]
    return Q(**{f"{first.removeprefix('-')}__{'lte' if first.startswith('-') else 'gte'}": values[0]}) & past
