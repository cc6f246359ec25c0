"""Model instances from the columns of a plain statement, converted as the ORM converts them.

A few reads run on every page or API request (the user of a request, the session a page
shows and its first events): for such small reads, building and compiling the ORM's query
cost more CPU than the database's answer (about 0.3 ms a query against 0.05). Those run as
plain SQL on the driver's cursor; this turns their rows into the model instances the ORM
would have made, each column through the same converters the ORM's compiler applies (the
backend's, then the field's: `datetime`s made aware, SQLite's booleans, JSON parsed).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connections
from django.db.models import Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


def columns(model: type[Model], table: str = "") -> str:
    """The model's columns in field order (each after `table.` when given), for a SELECT."""
    return ", ".join(f"{table}.{field.column}" if table else field.column for field in model._meta.concrete_fields)


def instance(model: type[M], alias: str, values: Sequence[Any]) -> M:
    """A model instance, as loaded from `alias`, from its columns in `columns()`'s order."""
    connection = connections[alias]
    converted = []
    for (expression, converters), value in zip(_converters(model, alias), values):
        for convert in converters:
            value = convert(value, expression, connection)
        converted.append(value)
    return model.from_db(alias, _attnames(model), converted)


@functools.cache
def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


@functools.cache
def _converters(model: type[Model], alias: str) -> list[tuple[Any, list[Converter]]]:
    # Built once, on the calling thread's connection to `alias`: what they convert by (the
    # vendor, the settings' time zone) is the same on every thread's.
    connection = connections[alias]
    found = []
    for field in model._meta.concrete_fields:
        expression = field.get_col(model._meta.db_table)
        found.append((expression, connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)))
    return found
