"""A run nobody watches costs nothing: no rendering, no message."""
from __future__ import annotations

import pytest

from eval_app import broadcast, metrics, services
from eval_app.models import EvalCaseResult

from .conftest import AGENT

pytestmark = pytest.mark.django_db


@pytest.fixture
def fresh_layer(settings):
    # A layer of its own: no group is left over from another test's viewers.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def test_an_unwatched_run_renders_nothing(demo_set, fresh_layer, monkeypatch):
    run = services.eval_run_create(eval_set=demo_set, app_name=AGENT, metrics=metrics.eval_metrics({"response_match_score": 0.8}), start=False)
    result = EvalCaseResult.objects.create(run=run, eval_id="greeting", status="passed", case_data={})

    def must_not_render(*args, **kwargs):
        raise AssertionError("rendered for a run nobody watches")

    monkeypatch.setattr(broadcast, "render_to_string", must_not_render)
    broadcast.case_finished(result=result)
    broadcast.run_changed(run_pk=run.pk)


def test_the_snapshot_holds_the_rows_so_far_and_their_pks(demo_set):
    run = services.eval_run_create(eval_set=demo_set, app_name=AGENT, metrics=metrics.eval_metrics({"response_match_score": 0.8}), start=False)
    result = EvalCaseResult.objects.create(run=run, eval_id="greeting", status="passed", case_data={})
    (rows, live), sent = broadcast.snapshot(run.pk)
    assert rows.startswith('<tbody id="case-results" hx-swap-oob="true">') and f'id="result-{result.pk}"' in rows
    assert 'id="run-header"' in live and 'id="run-progress"' in live
    assert sent == {result.pk}
    assert broadcast.snapshot(run.pk + 1) is None
