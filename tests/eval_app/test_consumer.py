"""The run page's websocket: a snapshot on connect, then progress and each finished case as OOB HTML."""
from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from uvicorn.protocols.utils import ClientDisconnected

from eval_app import broadcast, metrics, services
from eval_app.consumers import EvalRunConsumer
from eval_app.evalset_files import parse_eval_set_file
from eval_app.routing import websocket_urlpatterns

from sessions_app.broadcast import listened

from .conftest import AGENT, DEMO_FILE

# The consumer reads the database from another thread, on its own connection: it sees only commits.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("async_db_threads")]


@sync_to_async
def queued_run(eval_ids):
    parsed = parse_eval_set_file(filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
    eval_set = services.eval_set_import(parsed=parsed, app_name=AGENT)
    return services.eval_run_create(eval_set=eval_set, app_name=AGENT, metrics=metrics.eval_metrics({"response_match_score": 0.8}),
                                    eval_ids=eval_ids, start=False)


async def connect(run_pk: int, query: str = "") -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/evals/runs/{run_pk}/{query}")
    connected, _ = await comm.connect(timeout=10)
    assert connected
    return comm


async def test_it_streams_progress_and_case_rows_until_the_run_completes():
    run = await queued_run(["greeting", "plan_lisbon"])
    comm = await connect(run.pk)
    rows, live = await comm.receive_from(), await comm.receive_from()
    # Rows come alone: a fragment starting with other elements would lose its <tbody>/<tr>.
    assert rows.startswith('<tbody id="case-results" hx-swap-oob="true">')
    assert 'aria-valuenow="0"' in live and 'id="run-header"' in live

    await sync_to_async(services.eval_run_execute_inline)(run)
    messages = []
    while not any("completed" in m and 'id="run-header"' in m for m in messages):
        messages.append(await comm.receive_from(timeout=5))
    rows = [i for i, m in enumerate(messages) if m.startswith('<tbody hx-swap-oob="afterbegin:#case-results">')]
    assert len(rows) == 2 and all('<tr id="result-' in messages[i] for i in rows)
    # Each row is followed by the progress it brought.
    assert 'aria-valuenow="50"' in messages[rows[0] + 1] and 'aria-valuenow="100"' in messages[rows[1] + 1]
    assert 'id="run-progress" class="run-progress" hx-swap-oob="true"' in messages[rows[1] + 1]
    await comm.disconnect()


async def test_rows_already_in_the_snapshot_are_not_sent_again():
    run = await queued_run(["greeting"])
    await sync_to_async(services.eval_run_execute_inline)(run)
    result = await run.results.aget()
    comm = await connect(run.pk)
    rows, live = await comm.receive_from(), await comm.receive_from()
    assert f'id="result-{result.pk}"' in rows and 'aria-valuenow="100"' in live
    # As when the case finished while the page was connecting: in the snapshot, and then pushed.
    await sync_to_async(broadcast.case_finished)(result=result)
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_page_that_says_its_newest_result_gets_only_newer_rows_on_top_of_its_own():
    """The page's rows stay (with any "older results" it loaded): the snapshot adds, not replaces."""
    run = await queued_run(["greeting", "plan_lisbon"])
    await sync_to_async(services.eval_run_execute_inline)(run)
    older, newer = [r async for r in run.results.order_by("pk")]

    comm = await connect(run.pk, f"?after={older.pk}")
    rows, live = await comm.receive_from(), await comm.receive_from()
    assert rows.startswith('<tbody hx-swap-oob="afterbegin:#case-results">')
    assert f'id="result-{newer.pk}"' in rows and f'id="result-{older.pk}"' not in rows
    assert 'id="run-header"' in live
    # A late push of a row the page had, or one the snapshot brought, is not sent again.
    for result in (older, newer):
        await sync_to_async(broadcast.case_finished)(result=result)
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()

    comm = await connect(run.pk, f"?after={newer.pk}")  # nothing missed: progress only
    assert 'id="run-header"' in await comm.receive_from()
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_page_missing_more_than_a_page_gets_the_newest_page_in_place_of_its_rows(monkeypatch):
    monkeypatch.setattr(broadcast.selectors, "RESULTS_PAGE", 1)
    run = await queued_run(["greeting", "plan_lisbon"])
    await sync_to_async(services.eval_run_execute_inline)(run)
    newest = await run.results.order_by("-pk").afirst()
    comm = await connect(run.pk, "?after=0")
    rows = await comm.receive_from()
    assert rows.startswith('<tbody id="case-results" hx-swap-oob="true">')
    assert f'id="result-{newest.pk}"' in rows and "older results" in rows
    await comm.disconnect()


async def test_each_change_is_rendered_once_whatever_the_number_of_viewers(monkeypatch):
    run = await queued_run(["greeting"])
    viewers = [await connect(run.pk) for _ in range(2)]
    for comm in viewers:
        await comm.receive_from(), await comm.receive_from()  # the snapshot
    rendered = []
    real_render = broadcast.render_to_string

    def counting_render(template_name, context):
        rendered.append(template_name)
        return real_render(template_name, context)

    monkeypatch.setattr(broadcast, "render_to_string", counting_render)
    await sync_to_async(services.eval_run_execute_inline)(run)
    # Running, the case's row and progress, finished: four frames each, from four renders in all.
    for comm in viewers:
        frames = [await comm.receive_from(timeout=5) for _ in range(4)]
        assert sum(f.startswith('<tbody hx-swap-oob="afterbegin:#case-results">') for f in frames) == 1
        assert "completed" in frames[-1]
        assert await comm.receive_nothing(timeout=0.1)
        await comm.disconnect()
    assert sorted(rendered) == ["eval_app/partials/case_pushed.html"] + ["eval_app/partials/run_live.html"] * 3


async def test_it_refuses_an_unknown_run_and_anonymous_users_when_login_is_required(settings):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/evals/runs/999/")
    connected, code = await comm.connect(timeout=10)
    assert not connected and code == 4404
    await comm.disconnect()  # what the server sends after the close: the consumer ends
    run = await queued_run(["greeting"])
    settings.ADKUI_LOCAL_DEV = False
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/evals/runs/{run.pk}/")
    connected, code = await comm.connect(timeout=10)
    assert not connected and code == 4401
    await comm.disconnect()


async def test_a_viewer_whose_socket_closed_under_a_push_leaves_the_runs_group():
    """The server raises ClientDisconnected for a send to a socket that closed
    meanwhile, and channels then never calls disconnect(): the consumer leaves
    the run's group anyway, so the run's pushes stop being rendered for it."""
    run = await queued_run(["greeting"])
    inbox: asyncio.Queue = asyncio.Queue()
    await inbox.put({"type": "websocket.connect"})
    sent: list[str] = []

    async def send(message: dict) -> None:
        if message["type"] == "websocket.send":
            sent.append(message["text"])
            raise ClientDisconnected()  # what uvicorn raises

    scope = {"type": "websocket", "path": f"/ws/evals/runs/{run.pk}/", "query_string": b"", "headers": [],
             "url_route": {"args": (), "kwargs": {"pk": run.pk}}}
    with pytest.raises(ClientDisconnected):
        await asyncio.wait_for(EvalRunConsumer.as_asgi()(scope, inbox.get, send), timeout=10)
    assert sent  # it had joined, and was sending the snapshot
    assert not await sync_to_async(listened)(broadcast.run_group(run.pk))
