"""Live run page: progress and each finished case, pushed as HTML for htmx's ws extension."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from access.auth import websocket_allowed

from .broadcast import run_group
from .models import EvalCaseResult, EvalRun

CLOSE_LOGIN_REQUIRED, CLOSE_NOT_FOUND = 4401, 4404  # as sessions_app's consumers


class EvalRunConsumer(AsyncWebsocketConsumer):
    """Joins the run's group, then sends a snapshot, so nothing finished while the
    page loaded is missed; rows already in the snapshot are not sent again.

    Table rows travel in messages of their own: an HTML fragment that starts
    with other elements is parsed "in body", where <tbody> and <tr> are dropped.
    """

    group = ""

    async def connect(self) -> None:
        if not websocket_allowed(self.scope):
            await self.close(code=CLOSE_LOGIN_REQUIRED)
            return
        self.run_pk = int(self.scope["url_route"]["kwargs"]["pk"])
        if not await EvalRun.objects.filter(pk=self.run_pk).aexists():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = run_group(self.run_pk)
        self.sent: set[int] = set()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        for html in await database_sync_to_async(self._snapshot)():
            await self.send(text_data=html)

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def case_finished(self, message: dict[str, Any]) -> None:
        if message["result"] in self.sent:
            return
        for html in await database_sync_to_async(self._case_html)(message["result"]):
            await self.send(text_data=html)

    async def run_changed(self, message: dict[str, Any]) -> None:
        html = await database_sync_to_async(self._run_html)()
        if html:
            await self.send(text_data=html)

    # ---- rendering (in a thread: these read the database) ----

    def _run(self) -> EvalRun | None:
        return EvalRun.objects.select_related("eval_set").filter(pk=self.run_pk).first()

    def _snapshot(self) -> list[str]:
        run = self._run()
        if run is None:
            return []
        results = list(run.results.order_by("pk"))
        self.sent.update(r.pk for r in results)
        rows = render_to_string("eval_app/partials/run_snapshot.html", {"run": run, "results": results})
        return [rows, self._live(run)]

    def _live(self, run: EvalRun) -> str:
        return render_to_string("eval_app/partials/run_live.html", {"run": run, "oob": True})

    def _run_html(self) -> str:
        run = self._run()
        return self._live(run) if run else ""

    def _case_html(self, result_pk: int) -> list[str]:
        run = self._run()
        result = EvalCaseResult.objects.filter(pk=result_pk).first()
        if run is None or result is None:
            return []
        self.sent.add(result.pk)
        row = render_to_string("eval_app/partials/case_pushed.html", {"run": run, "result": result})
        return [row, self._live(run)]
