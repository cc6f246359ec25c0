"""The home page's socket: a nudge to reload its summaries when anything they count changes."""
from __future__ import annotations

import asyncio
from typing import Any

from sessions_app.broadcast import ACTIVITY_GROUP
from sessions_app.consumers import PushConsumer

# A burst of changes (a chat's events, an eval run's cases) is one reload a
# little later, not one per change.
REFRESH_DELAY = 0.5
# Out of band, htmx puts this in place of the page's own and, as it loads,
# fetches the page again and swaps in the summaries (the sections named).
REFRESH = ('<div id="home-refresh" hx-swap-oob="true" hx-get="" hx-trigger="load" hx-swap="none" '
           'hx-select-oob="#app-list,#recent-sessions,#running,#attention,#eval-latest"></div>')


class HomeConsumer(PushConsumer):
    refresh: asyncio.Task | None = None

    async def connect(self) -> None:
        if not await self.allowed():
            return
        await self.join(ACTIVITY_GROUP)
        await self.accept()

    async def leave(self) -> None:
        if self.refresh is not None:
            self.refresh.cancel()
        await super().leave()

    async def activity_changed(self, message: dict[str, Any]) -> None:
        if self.refresh is None or self.refresh.done():
            self.refresh = asyncio.create_task(self._refresh_soon())

    async def _refresh_soon(self) -> None:
        await asyncio.sleep(REFRESH_DELAY)
        await self.send(text_data=REFRESH)
