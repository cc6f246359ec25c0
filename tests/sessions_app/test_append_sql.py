"""The append path's raw SQL must track the models it writes."""
from __future__ import annotations

import pytest
from django.db import models

from sessions_app import services
from sessions_app._append_sql import CHANGE_COLUMNS, EVENT_COLUMNS
from sessions_app.models import Event, Session, StateChange


@pytest.mark.parametrize(("model", "columns"), [(Event, EVENT_COLUMNS), (StateChange, CHANGE_COLUMNS)])
def test_raw_inserts_name_every_column_of_their_model(model: type[models.Model], columns: tuple[str, ...]) -> None:
    expected = {field.column for field in model._meta.concrete_fields if not field.primary_key}
    assert sorted(columns) == sorted(expected), f"{model.__name__}: add the new column to the raw INSERT"
    assert len(columns) == len(set(columns))


@pytest.mark.django_db
def test_a_created_sessions_row_is_the_one_the_orm_writes() -> None:
    """`Statements.insert_session` writes what `Session.objects.create` would: every column, each
    value converted by its field (JSON, defaults, NULLs) and read back the same."""
    ours = services.session_create(app_name="a", user_id="u", session_id="ours", state={"k": [1, {"x": None}]})
    orm = Session.objects.create(app=ours.app, user_id="u", session_id="orm", state={"k": [1, {"x": None}]},
                                 create_time=ours.create_time, update_time=ours.update_time,
                                 state_mark=ours.state_mark)
    fields = [field.attname for field in Session._meta.concrete_fields if field.attname not in ("id", "session_id")]
    stored = Session.objects.filter(pk__in=[ours.pk, orm.pk]).order_by("session_id").values(*fields)
    assert stored[0] == stored[1]
    assert {field: getattr(ours, field) for field in fields} == stored[1]
