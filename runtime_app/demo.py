"""The demo session a newcomer sees first: the trip planner run on a few messages,
and what the scripted agents answer, read from their rules, for the home page."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App as AdkApp
from google.adk.sessions import Session
from google.genai import types

from eval_app import services as eval_services
from eval_app.evalset_files import parse_eval_config, parse_eval_set_file, simulator_config_json
from eval_app.models import EvalSet
from sessions_app import selectors as session_selectors
from sessions_app.models import Session as SessionRow
from sessions_app.session_service import DjangoSessionService

from .agents import agent_tree
from .runners import make_runner
from .scripted_model import ScriptedModel

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


DEMO_EVALS = Path(__file__).resolve().parent.parent / "eval_app" / "demo"


def _import_demo_eval_set() -> None:
    """The demo's eval sets: the deterministic one, one with judges and state
    assertions, and one with a simulated user (all offline: `adkui-scripted-judge`).
    The simulated user's case has a set of its own: it has no expected turns, so
    the reference metrics of the judged set cannot score it (ADK logs each as an error)."""
    _import_eval_set(DEMO_EVALS / "trip_planner.evalset.json")
    _import_eval_set(DEMO_EVALS / "judged" / "trip_planner_judged.evalset.json", DEMO_EVALS / "judged" / "test_config.json")
    _import_eval_set(
        DEMO_EVALS / "simulated" / "trip_planner_simulated.evalset.json", DEMO_EVALS / "simulated" / "test_config.json"
    )


def _import_eval_set(path: Path, config: Path | None = None) -> None:
    parsed = parse_eval_set_file(filename=path.name, content=path.read_bytes())
    if EvalSet.objects.filter(app_name=DEMO_APP, eval_set_id=parsed.eval_set.eval_set_id).exists():
        return
    metrics, simulator = None, None
    if config is not None:
        eval_config, metrics = parse_eval_config(content=config.read_bytes(), filename=config.name)
        simulator = simulator_config_json(eval_config)
    eval_services.eval_set_import(parsed=parsed, app_name=DEMO_APP, metrics=metrics, user_simulator_config=simulator)


def demo_session() -> SessionRow | None:
    """The stored demo session, once `load_demo` (or `manage.py up`) made it."""
    return session_selectors.session_find(app_name=DEMO_APP, user_id=DEMO_USER, session_id=DEMO_SESSION)


@dataclass(frozen=True)
class Phrase:
    """A message a scripted agent answers, and what its rule does with it."""

    text: str
    description: str
    sub_agent: str = ""  # the sub-agent whose rule answers it; "" for the root agent


def scripted_phrases(root: BaseAgent | AdkApp) -> list[Phrase]:
    """The examples of the rules of every scripted model in the agent's tree.

    Read from the rules themselves (`Rule.examples`, checked against their
    patterns), so the list cannot drift from what the agents answer. An
    agent on a real model (ADKUI_DEMO_MODEL) has none: it answers anything.
    """
    top = root.root_agent if isinstance(root, AdkApp) else root
    phrases: list[Phrase] = []
    for agent in agent_tree(top):
        model = getattr(agent, "model", None)
        for rule in model.rules if isinstance(model, ScriptedModel) else []:
            phrases += [Phrase(text, rule.example_description(text), "" if agent is top else agent.name) for text in rule.examples
                        if text not in {p.text for p in phrases}]
    return phrases
