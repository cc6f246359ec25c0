"""Fit a JSON value into a byte budget, marking what was cut.

Long strings are cut first (all to one common length, the longest that fits),
then long lists keep their head and tail. Every cut leaves a visible marker in
the value itself, so whoever reads the record sees where text is missing.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

MIN_STRING = 120  # below this, cutting strings stops helping and lists are cut instead
STRING_MARK = " …[{n} more characters truncated]"
LIST_MARK = "…[{n} more items truncated]"
STRING_MARK_RE = re.compile(r" …\[(\d+) more characters truncated\]$")


@dataclass(frozen=True)
class Capped:
    value: Any
    truncated: bool
    original_bytes: int


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def cap(value: Any, max_bytes: int) -> Capped:
    value = _clean(value)
    size = json_size(value)
    if size <= max_bytes:
        return Capped(value, False, size)
    cut = _fit_strings(value, max_bytes)
    if cut is None:
        cut = _fit_lists(_clip_strings(value, MIN_STRING), max_bytes)
    if cut is None:
        cut = {"truncated": True, "bytes": size}
    return Capped(cut, True, size)


def split_mark(text: str) -> tuple[str, int | None]:
    """A possibly cut string: its kept text and how many characters were cut (None: not cut)."""
    match = STRING_MARK_RE.search(text)
    if match is None:
        return text, None
    return text[: match.start()], int(match.group(1))


def _fit_strings(value: Any, max_bytes: int) -> Any | None:
    """The value with every string cut to the longest common length that fits."""
    return _largest_fit(lambda n: _clip_strings(value, n), MIN_STRING, _longest_string(value), max_bytes)


def _fit_lists(value: Any, max_bytes: int) -> Any | None:
    """The value with every list cut to the longest common length that fits."""
    return _largest_fit(lambda n: _clip_lists(value, n), 2, _longest_list(value), max_bytes)


def _largest_fit(clip: Callable[[int], Any], lo: int, hi: int, max_bytes: int) -> Any | None:
    """Binary search for the largest n in [lo, hi] whose `clip(n)` fits in max_bytes."""
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = clip(mid)
        if json_size(candidate) <= max_bytes:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def _clean(value: Any) -> Any:
    """JSON-safe copy; NUL characters (refused by PostgreSQL's jsonb) made visible."""
    if isinstance(value, str):
        return value.replace("\x00", "\u2400") if "\x00" in value else value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _clean(str(value))


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def _longest_list(value: Any) -> int:
    if isinstance(value, dict):
        return max((_longest_list(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max([len(value), *(_longest_list(v) for v in value)])
    return 0


def _clip_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + STRING_MARK.format(n=len(value) - limit)
    if isinstance(value, dict):
        return {k: _clip_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_strings(v, limit) for v in value]
    return value


def _clip_lists(value: Any, limit: int) -> Any:
    if isinstance(value, dict):
        return {k: _clip_lists(v, limit) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    items = [_clip_lists(v, limit) for v in value]
    if len(items) <= limit:
        return items
    head = limit // 2
    tail = limit - head - 1
    return [*items[:head], LIST_MARK.format(n=len(items) - head - tail), *(items[-tail:] if tail else [])]
