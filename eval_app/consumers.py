"""Live run page: progress and each finished case, pushed as HTML for htmx's ws extension."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from sessions_app.consumers import CLOSE_NOT_FOUND, PushConsumer

from . import broadcast


class EvalRunConsumer(PushConsumer):
    """Joins the run's group, then sends a snapshot, so nothing finished while the
    page loaded is missed. The page says the newest result it holds (`?after=N`):
    the snapshot adds only newer rows, and no row the page or the snapshot holds is
    sent again. What it sends is rendered by `broadcast`; this only forwards it."""

    async def connect(self) -> None:
        if not await self.allowed():
            return
        run_pk = int(self.scope["url_route"]["kwargs"]["pk"])
        self.after = self.query_number("after")
        # Joined before the snapshot is read: a case finishing in between is then
        # in the snapshot, or in a message handled after this returns, or both.
        await self.join(broadcast.run_group(run_pk))
        snapshot = await database_sync_to_async(broadcast.snapshot)(run_pk, after=self.after)
        if snapshot is None:
            await self.leave()  # at once: a member of the group would make it look watched
            await self.close(code=CLOSE_NOT_FOUND)
            return
        frames, self.sent = snapshot
        await self.accept()
        for html in frames:
            await self.send(text_data=html)

    async def case_finished(self, message: dict[str, Any]) -> None:
        if message["result"] in self.sent or message["result"] <= (self.after or 0):
            return
        self.sent.add(message["result"])
        await self.send(text_data=message["row"])
        await self.send(text_data=message["live"])

    async def run_changed(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["html"])
