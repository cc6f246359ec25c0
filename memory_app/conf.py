"""The settings this app reads, each with its default (none is required in settings.py).

| setting | default | effect |
|---|---|---|
| `ADKUI_MAX_ARTIFACT_BYTES` | 10 MiB | largest artifact payload a save or upload accepts |
| `ADKUI_MEMORY_MAX_RESULTS` | 10 | memories one search returns (ADK's in-memory service returns 10) |
| `ADKUI_MEMORY_OFFLOAD` | `["reset", "timeout"]` | when a session is offloaded to memory without being asked: `reset` (the chat starts a new session), `timeout` (idle too long) |
| `ADKUI_MEMORY_IDLE_SECONDS` | 1800 | idle time after which `timeout` offloads a session |
"""
from __future__ import annotations

from django.conf import settings

DEFAULT_MAX_ARTIFACT_BYTES = 10 * 1024 * 1024
DEFAULT_MEMORY_MAX_RESULTS = 10
DEFAULT_MEMORY_OFFLOAD = ("reset", "timeout")
DEFAULT_MEMORY_IDLE_SECONDS = 1800


def max_artifact_bytes() -> int:
    return int(getattr(settings, "ADKUI_MAX_ARTIFACT_BYTES", DEFAULT_MAX_ARTIFACT_BYTES))


def memory_max_results() -> int:
    return int(getattr(settings, "ADKUI_MEMORY_MAX_RESULTS", DEFAULT_MEMORY_MAX_RESULTS))


def memory_offload_triggers() -> frozenset[str]:
    value = getattr(settings, "ADKUI_MEMORY_OFFLOAD", DEFAULT_MEMORY_OFFLOAD)
    if isinstance(value, str):  # "reset,timeout" from an environment variable
        value = value.split(",")
    return frozenset(v.strip() for v in value if v and v.strip())


def memory_idle_seconds() -> float:
    return float(getattr(settings, "ADKUI_MEMORY_IDLE_SECONDS", DEFAULT_MEMORY_IDLE_SECONDS))
