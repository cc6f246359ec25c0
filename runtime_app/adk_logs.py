"""ADK's advice to cache the context of an app that transfers between agents, once per agent.

ADK's Runner logs it once per app name (a hosted model re-reads the whole prompt
after each transfer; a context cache spares that). adkui runs every eval case
in a sandbox app of its own (`agent@eval-…`), a new name per case, so the
advice came once per case: it is passed on once per agent instead. An agent
whose models are all the offline scripted model (the bundled demo, unless
ADKUI_DEMO_MODEL names a real one) has no prompt cache to speak of: its advice
is not passed on at all (`runners.make_runner` says which agents those are).

The filter sits on ADK's runners logger (adkui/settings.py LOGGING); it imports
no ADK, as logging is configured when every process starts.
"""
from __future__ import annotations

import logging

from sessions_app.sandbox import real_app_name

# The start of ADK 2.13's message (google/adk/runners.py, Runner._warn_uncached_agent_transfer).
UNCACHED_TRANSFER = 'App "%s" can transfer between agents but has no context_cache_config.'

_settled: set[str] = set()  # agents whose advice was passed on, or is moot


def cache_advice_moot(app_name: str) -> None:
    """The agent of `app_name` runs on no hosted model: its advice is not passed on."""
    _settled.add(real_app_name(app_name))


class CacheAdviceOncePerAgent(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith(UNCACHED_TRANSFER) and record.args):
            return True
        agent = real_app_name(str(record.args[0]))
        if agent in _settled:
            return False
        _settled.add(agent)
        return True
