"""Agent loading, like `adk web AGENTS_DIR`, through ADK's own `AgentLoader`.

Each sub-package of the agents directory exposing `root_agent` (or an ADK
`App`) is one app. A package that fails to import is reported with its
traceback instead of taking the server down.
"""
from __future__ import annotations

import functools
import importlib
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from django.conf import settings
from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App as AdkApp
from google.adk.cli.utils.agent_loader import AgentLoader


@dataclass(frozen=True)
class LoadedAgent:
    name: str
    root: BaseAgent | AdkApp | None = None
    error: str | None = None
    # The exception in one line ("RuntimeError: no API key"), for badges; `error` is the traceback.
    error_line: str = ""

    @property
    def ok(self) -> bool:
        return self.root is not None

    @property
    def description(self) -> str:
        agent = self.root.root_agent if isinstance(self.root, AdkApp) else self.root
        return getattr(agent, "description", "") or ""


class AgentNotFound(LookupError):
    pass


def agents_dir() -> str:
    return str(settings.ADKUI_AGENTS_DIR)


@functools.lru_cache(maxsize=8)
def _loader(directory: str) -> AgentLoader:
    return AgentLoader(directory)


def loader() -> AgentLoader:
    return _loader(agents_dir())


def agent_names() -> list[str]:
    try:
        return loader().list_agents()
    except OSError:
        return []


def load(name: str) -> LoadedAgent:
    """The agent (or ADK App) named `name`; a load error comes back as text."""
    found = find(name)
    if found is None:
        raise AgentNotFound(f"No agent named {name!r} in {agents_dir()}.")
    return found


def find(name: str) -> LoadedAgent | None:
    """`load(name)`, or None when the agents folder has no agent `name` (one listing of the folder)."""
    if name not in agent_names():
        return None
    try:
        return LoadedAgent(name=name, root=loader().load_agent(name))
    except Exception as exc:  # an agent's own import error must not take the UI down
        return LoadedAgent(name=name, error=traceback.format_exc(), error_line=_first_line(exc))


def load_all() -> list[LoadedAgent]:
    """Every agent of the agents folder, loaded (ADK caches the ones that load)."""
    return [load(name) for name in agent_names()]


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def reload(name: str) -> LoadedAgent:
    """The agent `name` loaded afresh from its files, so edits since the last load count.

    ADK's own reload (what `adk web --reload` uses): drop the loader's cached
    agent and the package's modules, then import again. Runs already started
    keep the agent object they hold.
    """
    loader().remove_agent_from_cache(name)
    importlib.invalidate_caches()  # files added to the package since are found too
    return load(name)


def agent_tree(root: BaseAgent | AdkApp) -> Iterator[BaseAgent]:
    """The root agent (of an App, or the agent itself), then its sub-agents, depth first."""
    agent = root.root_agent if isinstance(root, AdkApp) else root
    yield agent
    for sub_agent in agent.sub_agents:
        yield from agent_tree(sub_agent)
