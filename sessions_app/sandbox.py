"""Sandboxes: app names that keep a run's sessions and state apart.

An eval run (or anything else that must not touch what the developer's own
sessions see) runs its sessions under a sandbox app name, `agent@label`. ADK
scopes `app:` state by app name and `user:` state by app name and user, so a
sandbox's state, sessions, artifacts and memory are its own. `@` cannot occur
in an agent's name (agents are Python packages), so a sandbox name never
collides with a real app. The session browser and ADK's list routes leave
sandboxes out unless asked for them.
"""
from __future__ import annotations

import re

SEPARATOR = "@"
# An eval run names each case's sandbox `eval-<run pk>-<position>-<repeat>`.
EVAL_LABEL = re.compile(r"^eval-(\d{1,18})(?:-\d{1,9}-\d{1,9})?$")


def sandbox_app_name(app_name: str, label: str) -> str:
    """The sandbox `label` of agent `app_name`: `trip_planner@eval-12`."""
    if SEPARATOR in app_name:
        raise ValueError(f"{app_name!r} is already a sandbox.")
    if not label or SEPARATOR in label:
        raise ValueError(f"A sandbox label must be non-empty and without {SEPARATOR!r}; got {label!r}.")
    return f"{app_name}{SEPARATOR}{label}"


def is_sandbox(app_name: str) -> bool:
    return SEPARATOR in app_name


def real_app_name(app_name: str) -> str:
    """The agent a (possibly sandboxed) app name runs: `trip_planner@eval-12` -> `trip_planner`."""
    return app_name.partition(SEPARATOR)[0]


def sandbox_label(app_name: str) -> str:
    """`trip_planner@eval-12` -> `eval-12`; "" for a real app."""
    return app_name.partition(SEPARATOR)[2]


def eval_label(run_pk: int, position: int, repeat: int) -> str:
    """The sandbox label of one case (and repeat) of an eval run: `eval-12-0-1`."""
    return f"eval-{run_pk}-{position}-{repeat}"


def eval_run_pk(app_name: str) -> int | None:
    """The eval run whose sandbox `app_name` is (`trip_planner@eval-12-0-1` -> 12); None otherwise."""
    match = EVAL_LABEL.match(sandbox_label(app_name))
    return int(match.group(1)) if match else None
