"""Runners for the agents of the agents folder, on adkui's own services."""
from __future__ import annotations

from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps.app import App as AdkApp
from google.adk.events import Event as AdkEvent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner

from inspector_app.plugin import app_with_recorder
from memory_app.artifact_service import DjangoArtifactService
from memory_app.memory_service import DjangoMemoryService
from sessions_app.sandbox import real_app_name
from sessions_app.session_service import DjangoSessionService

from . import adk_logs
from .agents import agent_tree, load
from .scripted_model import ScriptedModel


def make_runner(name: str, **services: Any) -> Runner:
    """A Runner for agent `name` on our services (unless others are given).

    Every run adkui starts records what its model calls saw (inspector_app),
    and names a failing sub-agent as its error event's author.
    Raises AgentNotFound, or RuntimeError carrying the load traceback.
    """
    loaded = load(real_app_name(name))  # a sandbox (`agent@label`) runs its agent under its own name
    if not loaded.ok:
        raise RuntimeError(f"Agent {name!r} failed to load:\n{loaded.error}")
    services.setdefault("session_service", DjangoSessionService())
    services.setdefault("artifact_service", DjangoArtifactService())
    services.setdefault("memory_service", DjangoMemoryService())
    if runs_offline(loaded.root):
        adk_logs.cache_advice_moot(name)  # ADK's context-cache advice is for hosted models
    runner = Runner(app=app_with_recorder(loaded.root, app_name=name), app_name=name, **services)
    # Registered last: ADK stops at the first plugin that returns an event.
    runner.plugin_manager.register_plugin(ErrorAuthorPlugin())
    return runner


def runs_offline(root: BaseAgent | AdkApp) -> bool:
    """Whether every model of the agent's tree is the offline scripted model (an agent without
    a model of its own uses its parent's)."""
    models = [agent.model for agent in agent_tree(root) if getattr(agent, "model", None)]
    return bool(models) and all(isinstance(model, ScriptedModel) for model in models)


class ErrorAuthorPlugin(BasePlugin):
    """Names the agent that failed as the author of ADK's error event.

    ADK 2.13 stamps a node's events with its context's `event_author`, which a
    sub-agent inherits from its parent and replaces only when it yields its own
    first event. A sub-agent that fails before that (its first model call is
    over max_llm_calls, its model errs) gets an error event authored by the
    agent that handed over to it. The event's node path still names the node
    that failed (`trip_planner@1/weather_expert@1`): when that node is an agent
    of the app, the event is its. A failing non-agent node (a workflow's
    function) keeps ADK's author, the workflow, as ADK intends.
    `on_event_callback` is ADK's hook for changing an event before the Runner
    stores and yields it.
    """

    def __init__(self) -> None:
        super().__init__(name="adkui_error_author")

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: AdkEvent) -> AdkEvent | None:
        if not event.error_code or not event.node_info.path:
            return None
        failed = failing_agent(invocation_context.agent, event.node_info.path)
        if failed is None or failed == event.author:
            return None
        return event.model_copy(update={"author": failed})


def failing_agent(agent: BaseAgent, node_path: str) -> str | None:
    """The agent of the app named by the last segment of an ADK node path (`parent@1/child@1`), if any."""
    name = node_path.rsplit("/", 1)[-1].rsplit("@", 1)[0]
    return name if name and agent.root_agent.find_agent(name) is not None else None

