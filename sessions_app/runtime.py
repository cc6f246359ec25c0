"""The agent runtime, as the feature apps below it reach it.

`runtime_app` loads agents and builds Runners, and sits above every feature
app, so none of them imports it. What they need of it (the names of the
agents there are; a Runner for one of them) is named in settings
(`ADKUI_AGENT_NAMES`, `ADKUI_RUNNER_FACTORY`) and resolved here, as Django
resolves the mail backend it is told to use.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string
from google.adk.runners import Runner


def agent_names() -> list[str]:
    """The apps of the agents folder, like `adk web`'s list of apps."""
    return import_string(settings.ADKUI_AGENT_NAMES)()


def make_runner(app_name: str, **services: Any) -> Runner:
    """A Runner for agent `app_name` on our services, unless others are given."""
    return import_string(settings.ADKUI_RUNNER_FACTORY)(app_name, **services)
