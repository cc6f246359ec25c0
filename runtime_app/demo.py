"""The demo session a newcomer sees first: the trip planner run on a few messages."""
from __future__ import annotations

import asyncio
from pathlib import Path

from google.adk.sessions import Session
from google.genai import types

from eval_app import services as eval_services
from eval_app.evalset_files import parse_eval_set_file
from eval_app.models import EvalSet
from sessions_app.session_service import DjangoSessionService

from .runners import make_runner

DEMO_APP, DEMO_USER, DEMO_SESSION = "trip_planner", "demo_user", "demo-session"
DEMO_MESSAGES = [
    "Hi there!",
    "Please plan a trip to Lisbon",
    "What is the weather in Lisbon?",
    "And the weather in Atlantis?",
]


async def _run_demo() -> Session:
    service = DjangoSessionService()
    existing = await service.get_session(app_name=DEMO_APP, user_id=DEMO_USER, session_id=DEMO_SESSION)
    if existing is not None:
        return existing
    await service.create_session(
        app_name=DEMO_APP, user_id=DEMO_USER, session_id=DEMO_SESSION, state={"user:name": "Ada", "trip_budget": 1200}
    )
    runner = make_runner(DEMO_APP, session_service=service)
    for text in DEMO_MESSAGES:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id=DEMO_USER, session_id=DEMO_SESSION, new_message=message):
            pass
    return await service.get_session(app_name=DEMO_APP, user_id=DEMO_USER, session_id=DEMO_SESSION)


def load_demo() -> Session:
    """Create the demo session once (idempotent) by running the demo agent,
    and import the demo eval set so the Evals page has something to run."""
    session = asyncio.run(_run_demo())
    _import_demo_eval_set()
    return session


def _import_demo_eval_set() -> None:
    path = Path(__file__).resolve().parent.parent / "eval_app" / "demo" / "trip_planner.evalset.json"
    parsed = parse_eval_set_file(filename=path.name, content=path.read_bytes())
    if not EvalSet.objects.filter(app_name=DEMO_APP, eval_set_id=parsed.eval_set.eval_set_id).exists():
        eval_services.eval_set_import(parsed=parsed, app_name=DEMO_APP)
