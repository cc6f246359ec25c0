"""Code run in child processes by the tests. Imports Django lazily: a spawned
child imports this module before Django is set up."""
from __future__ import annotations

import asyncio
import os


def database_url_for_children() -> str:
    """The URL of the test database (call inside a test), for child processes to use."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] or ""
    if s.get("PASSWORD"):
        auth += f":{s['PASSWORD']}"
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "adkui.settings"
    import django

    django.setup()


def scoped_writer(database_url: str, app: str, user: str, n: int, session_id: str, appends: int) -> None:
    """Append `appends` events to one session, each writing this writer's own
    keys in every scope plus the shared `user:last` / `app:last` keys."""
    setup_django(database_url)
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions

    from adkui.adk import DjangoSessionService

    async def run() -> None:
        service = DjangoSessionService()
        session = await service.get_session(app_name=app, user_id=user, session_id=session_id)
        for i in range(appends):
            delta = {
                f"user:w{n}": i, f"app:w{n}": i, f"mine{n}": i,
                "user:last": f"{n}-{i}", "app:last": f"{n}-{i}",
            }
            await service.append_event(session, Event(author=f"w{n}", actions=EventActions(state_delta=delta)))

    asyncio.run(run())


def say(database_url: str, app: str, user: str, session_id: str, texts: list[str]) -> None:
    """Append one agent message per text to a session, creating it if it is new."""
    setup_django(database_url)
    from google.adk.events.event import Event
    from google.genai import types

    from adkui.adk import DjangoSessionService

    async def run() -> None:
        service = DjangoSessionService()
        session = await service.get_session(app_name=app, user_id=user, session_id=session_id)
        if session is None:
            session = await service.create_session(app_name=app, user_id=user, session_id=session_id)
        for text in texts:
            content = types.Content(role="model", parts=[types.Part(text=text)])
            await service.append_event(session, Event(author="agent", invocation_id="elsewhere", content=content))

    asyncio.run(run())
