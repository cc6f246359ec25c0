"""Session health signals: what one ADK event adds to its session's counters.

Pure functions of an event (and the price table), shared by the write path
(`services.event_append`), the backfill of sessions stored before the signals
existed (migration 0007) and the timeline's "error" filter, so all of them,
and the inspector's tool-error count, agree on what an error, a turn or a tool
loop is. Repeated model requests and time to first token are not in events:
the inspector's recorder reports them (`services.session_health_record_model_call`).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from google.adk.events.event import Event as AdkEvent

# Google bills a request whose prompt is longer than this at a model's `*_long` rates.
LONG_PROMPT_TOKENS = 200_000
# A dated, preview or experimental build of a priced model costs what the model costs;
# other suffixes name other models (`-lite`, `-image`, `-live`), priced apart or not at all.
_VERSION_SUFFIX = re.compile(r"-(?:preview|exp|latest|\d)")

# How much call history `record_calls` keeps: a loop repeats a recent call of a
# running invocation, and the history is rewritten on the session row by every call.
RECENT_INVOCATIONS = 4
CALLS_PER_INVOCATION = 256

_RATE_NAMES = {"input", "output", "cached", "input_long", "output_long", "cached_long"}

# Session columns a contribution adds to, by contribution field.
COUNTERS = {
    "turns": "turn_count",
    "errors": "error_count",
    "prompt_tokens": "prompt_tokens",
    "output_tokens": "output_tokens",
    "cached_tokens": "cached_tokens",
    "unpriced": "unpriced_count",
    "cache_hits": "cache_hit_count",
    "compactions": "compaction_count",
}


@dataclass(frozen=True)
class Contribution:
    """One event's share of its session's signals (tool loops need the session's history)."""

    turns: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0
    cache_hits: int = 0
    compactions: int = 0
    call_signatures: tuple[int, ...] = ()

    def increments(self) -> dict[str, float]:
        """Session column -> amount to add, leaving out zeros (`cost_usd` only when priced)."""
        found: dict[str, float] = {column: getattr(self, name) for name, column in COUNTERS.items() if getattr(self, name)}
        if self.cost_usd is not None:
            found["cost_usd"] = self.cost_usd
        return found


def is_tool_error(response: Any) -> bool:
    """A tool's response reporting failure: the inspector's and the timeline's test."""
    return isinstance(response, dict) and ("error" in response or response.get("status") == "error")


def is_error_event(event: AdkEvent) -> bool:
    if event.error_code:
        return True
    return any(is_tool_error(r.response) for r in event.get_function_responses())


def is_turn(event: AdkEvent) -> bool:
    """A user message (a state-only event the user authored is not a turn)."""
    return event.author == "user" and event.content is not None and bool(event.content.parts)


def is_cache_hit(event: AdkEvent) -> bool:
    """Served partly from a context cache: cached tokens, or an active cache as ADK's telemetry counts a hit."""
    usage = event.usage_metadata
    if usage is not None and (usage.cached_content_token_count or 0) > 0:
        return True
    return event.cache_metadata is not None and event.cache_metadata.cache_name is not None


def signature(*parts: str) -> int:
    """A signed 64-bit hash of `parts` (a BigIntegerField holds it)."""
    # surrogatepass: a lone surrogate (valid in JSON text we accept) must hash, not fail the append.
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_signature(name: str, args: Any) -> int:
    """Same tool, same args (in any key order)."""
    return signature("call", name, _canonical(args or {}))


def record_calls(recent: Any, invocation_id: str, signatures: Sequence[int]) -> tuple[int, list[list[Any]]]:
    """Add one event's call signatures to `recent` (`Session.recent_calls`); return how
    many repeat an earlier call of their invocation (tool loops) and the new history.

    Loops are counted within an invocation: a user asking the same thing in a
    later turn is no loop. A repeat within one event counts too.
    """
    entries = [e for e in recent if isinstance(e, list) and len(e) == 2] if isinstance(recent, list) else []
    seen = next((list(e[1]) for e in entries if e[0] == invocation_id), [])
    known, loops = set(seen), 0
    for sig in signatures:
        if sig in known:
            loops += 1
        else:
            known.add(sig)
            seen.append(sig)
    entries = [e for e in entries if e[0] != invocation_id] + [[invocation_id, seen[-CALLS_PER_INVOCATION:]]]
    return loops, entries[-RECENT_INVOCATIONS:]


def request_fingerprint(request: Mapping[str, Any]) -> int:
    """A model request (its JSON form): the same one sent again is a repeated request."""
    return signature("request", _canonical(request))


def model_prices() -> Mapping[str, Mapping[str, float]]:
    prices = getattr(settings, "ADKUI_MODEL_PRICES", None)
    return prices if isinstance(prices, Mapping) else {}


def price_for(model: str | None, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    """The price entry of `model` (`models/gemini-2.5-flash-001` is `gemini-2.5-flash`), or None.

    An entry without numeric "input" and "output" rates counts as no price: a
    mistyped setting must leave costs unknown, never fail the append."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    entry = prices.get(name)
    if entry is None:
        key = next((k for k in sorted(prices, key=len, reverse=True)
                    if name.startswith(k) and _VERSION_SUFFIX.match(name, len(k))), None)
        entry = None if key is None else prices[key]
    return entry if _is_price(entry) else None


def _is_price(entry: Any) -> bool:
    def rate(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0

    return (
        isinstance(entry, Mapping) and rate(entry.get("input")) and rate(entry.get("output"))
        and all(rate(v) for k, v in entry.items() if k in _RATE_NAMES)
    )


def response_cost(price: Mapping[str, float], *, prompt: int, output: int, cached: int) -> float:
    """USD for one response: its prompt (cached tokens at the cached rate), output and thinking."""
    long = prompt > LONG_PROMPT_TOKENS

    def rate(name: str) -> float:
        if long and f"{name}_long" in price:
            return float(price[f"{name}_long"])
        return float(price[name])

    cached_rate = rate("cached") if "cached" in price else rate("input")
    cached = min(cached, prompt)
    return ((prompt - cached) * rate("input") + cached * cached_rate + output * rate("output")) / 1_000_000


def event_contribution(event: AdkEvent, prices: Mapping[str, Mapping[str, float]] | None = None) -> Contribution:
    prices = model_prices() if prices is None else prices
    usage = event.usage_metadata
    prompt = output = cached = 0
    if usage is not None:
        prompt = usage.prompt_token_count or 0
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        cached = usage.cached_content_token_count or 0
    cost, unpriced = None, 0
    if prompt or output:
        price = price_for(event.model_version, prices)
        if price is None:
            unpriced = 1
        else:
            cost = response_cost(price, prompt=prompt, output=output, cached=cached)
    return Contribution(
        turns=int(is_turn(event)),
        errors=int(is_error_event(event)),
        prompt_tokens=prompt,
        output_tokens=output,
        cached_tokens=cached,
        cost_usd=cost,
        unpriced=unpriced,
        cache_hits=int(is_cache_hit(event)),
        compactions=int(event.actions.compaction is not None),
        call_signatures=tuple(call_signature(c.name or "", c.args) for c in event.get_function_calls()),
    )


@dataclass
class SessionSignals:
    """A session's signals folded over its events in order (the backfill)."""

    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTERS.values(), 0))
    cost_usd: float | None = None
    tool_loop_count: int = 0
    recent_calls: list[list[Any]] = field(default_factory=list)
    error_seqs: list[int] = field(default_factory=list)

    def add(self, seq: int, invocation_id: str, contribution: Contribution) -> None:
        for column, amount in contribution.increments().items():
            if column == "cost_usd":
                self.cost_usd = (self.cost_usd or 0.0) + amount
            else:
                self.totals[column] += amount
        if contribution.errors:
            self.error_seqs.append(seq)
        if contribution.call_signatures:
            loops, self.recent_calls = record_calls(self.recent_calls, invocation_id, contribution.call_signatures)
            self.tool_loop_count += loops

    def columns(self) -> dict[str, Any]:
        return {**self.totals, "cost_usd": self.cost_usd, "tool_loop_count": self.tool_loop_count,
                "recent_calls": self.recent_calls}


def fold(events: Iterable[tuple[int, AdkEvent]], prices: Mapping[str, Mapping[str, float]] | None = None) -> SessionSignals:
    """Signals of a session from its (seq, event) pairs, oldest first, as its appends count them."""
    prices = model_prices() if prices is None else prices
    signals = SessionSignals()
    for seq, event in events:
        signals.add(seq, event.invocation_id or "", event_contribution(event, prices))
    return signals
