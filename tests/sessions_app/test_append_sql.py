"""The append path's raw SQL must track the models it writes."""
from __future__ import annotations

import pytest
from django.db import models

from sessions_app._append_sql import CHANGE_COLUMNS, EVENT_COLUMNS
from sessions_app.models import Event, StateChange


@pytest.mark.parametrize(("model", "columns"), [(Event, EVENT_COLUMNS), (StateChange, CHANGE_COLUMNS)])
def test_raw_inserts_name_every_column_of_their_model(model: type[models.Model], columns: tuple[str, ...]) -> None:
    expected = {field.column for field in model._meta.concrete_fields if not field.primary_key}
    assert sorted(columns) == sorted(expected), f"{model.__name__}: add the new column to the raw INSERT"
    assert len(columns) == len(set(columns))
