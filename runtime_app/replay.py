"""Replay a session: its user turns, run again in a new session against the agent's current code.

`replay_start` reloads the agent from the agents folder (its files may have
changed since the session ran), creates a new session of the same app and
user with the original's initial session state and `replay_of` set, and
feeds the original's user messages (with the state deltas they carried) to
the agent one by one, each after the previous run ended, in the background
on the server's event loop as a chat turn runs. Every event goes through
ADK's Runner on our services (`runs.run_agent`), so the replay is an
ordinary session: live on its own page, with its error events and traces.

`app:` and `user:` state is shared by every session of the app and user:
the replay starts from their current values (not the original's at the
time) and its runs change them for everyone, as any chat would. Only
session-scoped keys are copied, as a fork does.

A turn whose run fails is recorded by the run itself as that turn's error
event, and the replay goes on with the next turn: the original's later
messages were written already and do not depend on the agent's replies, so
each of them is still a fair comparison, and stopping would hide whether the
later turns changed too. It stops when its session is deleted, or when the
comparison page's Stop is pressed (the chat's Stop on the replay's own page
ends only the turn running, as it would in a chat).

Which replays are running is known to this process only (as for chat runs):
with several workers, the comparison page polls whichever it reaches.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import re
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from google.adk.runners import Runner
from google.genai import types

from eval_app.selectors import default_eval_id
from sessions_app import selectors
from sessions_app import services as session_services
from sessions_app.models import Session
from sessions_app.sandbox import real_app_name
from sessions_app.scopes import merge_state

from . import agents, broadcast, runs
from .replay_diff import Turn, TurnDiff, compare, split_turns, summarize
from .runners import make_runner

logger = logging.getLogger(__name__)

# What the comparison page reads of each session at most, so a huge session
# cannot make every poll of the page slow.
MAX_EVENTS = 5000
MAX_TURNS = 100


class ReplayError(ValueError):
    """A replay that cannot start; the message says why, for the user."""


@dataclass(frozen=True)
class UserTurn:
    """One user message to feed the agent again, with the state delta it carried."""

    content: types.Content
    state_delta: dict[str, Any] | None


@dataclass(frozen=True)
class ReplayPlan:
    replay: Session
    runner: Runner
    turns: list[UserTurn]


@dataclass
class Progress:
    """A replay running in this process (how far it got is read from its session)."""

    stop_requested: bool = False


_progress: dict[int, Progress] = {}  # replay session pk -> its replay running in this process
_background: set[asyncio.Task[None]] = set()  # keeps running replays from being garbage-collected


# ---- starting and running -------------------------------------------------------------


async def replay_start(*, session: Session) -> Session:
    """Create the replay session and start feeding it in the background; returns it at once.

    Must be called on the server's event loop (an async view), which runs the replay.
    """
    plan = await sync_to_async(replay_create)(session=session)
    _progress[plan.replay.pk] = Progress()  # running from now on, for the page the caller redirects to
    # A fresh context: the request's own ends with the response; the replay goes on.
    task = asyncio.create_task(replay_run(plan), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return plan.replay


def replay_create(*, session: Session) -> ReplayPlan:
    """The replay session (created) and what to feed it; ReplayError, and nothing written, when it cannot run."""
    runner = fresh_runner(session.app.name)
    turns = user_turns(session)
    if not turns:
        raise ReplayError(f"Session {session.session_id!r} has no user messages to replay.")
    with transaction.atomic():
        state = selectors.state_as_of(session, 0).session
        replay = session_services.session_create(app_name=session.app.name, user_id=session.user_id, state=state)
        Session.objects.filter(pk=replay.pk).update(replay_of=session)
    replay.replay_of = session
    return ReplayPlan(replay=replay, runner=runner, turns=turns)


def fresh_runner(app_name: str) -> Runner:
    """A Runner on the agent as its files are now (reloaded, not the cached import);
    a sandbox's (`agent@label`) runs its agent within the sandbox."""
    agent_name = real_app_name(app_name)
    if agent_name not in agents.agent_names():
        raise ReplayError(f"No agent named {agent_name!r} in the agents folder: there is nothing to replay it against.")
    loaded = agents.reload(agent_name)
    if not loaded.ok:
        raise ReplayError(f"Agent {app_name!r} failed to load, so it cannot replay: {loaded.error_line}")
    return make_runner(app_name)


def user_turns(session: Session) -> list[UserTurn]:
    """The session's user messages in order, each with the state delta it was sent with."""
    return [
        UserTurn(content=turn.user_event.content, state_delta=turn.user_event.actions.state_delta or None)
        for turn in split_turns(selectors.event_page(session))
    ]


async def replay_run(plan: ReplayPlan) -> None:
    """Feed the turns one after another, each once the previous run has ended (see the module's docstring)."""
    progress = _progress.setdefault(plan.replay.pk, Progress())
    try:
        for turn in plan.turns:
            if progress.stop_requested:
                break
            request = runs.RunRequest(key=plan.replay.key, new_message=turn.content, state_delta=turn.state_delta)
            run = runs.run_agent(request, runner=plan.runner)
            async for _ in run:
                pass  # the events reach the replay's viewers through the session service's broadcasts
            await sync_to_async(broadcast.run_finished)(session=plan.replay, error=str(run.error) if run.error else None)
            if run.error is not None and not await sync_to_async(selectors.session_with_app)(plan.replay.pk):
                break  # the replay session is gone: nothing more can be recorded
    except Exception:  # the replay must end, not the server
        logger.exception("The replay in session %s stopped", plan.replay.pk)
    finally:
        _progress.pop(plan.replay.pk, None)


def replay_stop(*, replay: Session) -> bool:
    """Stop a replay running in this process after its current turn (which is asked to stop too)."""
    progress = _progress.get(replay.pk)
    if progress is None:
        return False
    progress.stop_requested = True
    runs.stop_run(replay.key)
    return True


# ---- comparing --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayStatus:
    total: int  # the original's user turns
    replayed: int  # the replay's user turns so far
    running: bool  # being fed by this process
    last_unfinished: bool = False  # its last turn ended without the agent's final reply (stopped, failed)

    @property
    def complete(self) -> bool:
        return self.replayed >= self.total


def turns_of(session: Session) -> tuple[list[Turn], int, bool]:
    """The session's turns in comparable form (at most MAX_TURNS), how many it has, and whether some were left out."""
    events = selectors.event_page(session, limit=MAX_EVENTS)
    stored = split_turns(events)
    turns = []
    for number, turn in enumerate(stored[:MAX_TURNS], start=1):
        state = selectors.state_as_of(session, turn.last_seq)
        turns.append(summarize(number, turn, state.session, merge_state(state.app, state.user, {})))
    return turns, len(stored), len(stored) > MAX_TURNS or len(events) >= MAX_EVENTS


def comparison(replay: Session) -> dict[str, Any]:
    """Everything the comparison page shows of a replay and its original."""
    original = replay.replay_of
    if original is None:
        raise ReplayError(f"Session {replay.session_id!r} is not a replay, or its original was deleted.")
    # Read before the turns: a run leaves `_progress` only once its last event is stored, so a
    # page that sees it finished sees all its events. Read after, a run that ended in between
    # showed its last turn without the reply as "finished", and the page stopped polling.
    running = replay.pk in _progress
    original_turns, total, original_cut = turns_of(original)
    replay_turns, replayed, replay_cut = turns_of(replay)
    diffs: list[TurnDiff] = compare(original_turns, replay_turns)
    unfinished = not running and selectors.resumable_invocation(replay) is not None
    status = ReplayStatus(total=total, replayed=replayed, running=running, last_unfinished=unfinished)
    return {
        "original": original,
        "replay": replay,
        "diffs": diffs,
        "changed_count": sum(1 for d in diffs if d.changed),
        "status": status,
        "truncated": original_cut or replay_cut,
        "max_turns": MAX_TURNS,
        "eval_set_id": re.sub(r"[^A-Za-z0-9_]+", "_", f"{original.app.name}_evals").strip("_"),
        "eval_id": default_eval_id(original),
    }
