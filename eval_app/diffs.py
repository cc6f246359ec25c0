"""Side-by-side differences: tool trajectories (calls and their args) and response text."""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

SAME, CHANGED, MISSING, EXTRA = "same", "changed", "missing", "extra"


@dataclass
class ArgDiff:
    key: str
    expected: Any
    actual: Any
    kind: str  # same / changed / missing (only expected) / extra (only actual)

    @property
    def expected_json(self) -> str:
        return _json(self.expected)

    @property
    def actual_json(self) -> str:
        return _json(self.actual)


@dataclass
class CallRow:
    """One line of a trajectory diff: an expected call, an actual call, or both."""

    kind: str
    expected: dict[str, Any] | None
    actual: dict[str, Any] | None
    args: list[ArgDiff] = field(default_factory=list)

    @property
    def name(self) -> str:
        return (self.expected or self.actual or {}).get("name", "")


@dataclass
class Span:
    text: str
    kind: str  # same / missing (only in expected) / extra (only in actual)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _key(call: dict[str, Any]) -> str:
    return f"{call.get('name')}({_json(call.get('args') or {})})"


def arg_diffs(expected: dict[str, Any], actual: dict[str, Any]) -> list[ArgDiff]:
    rows = []
    for key in list(expected) + [k for k in actual if k not in expected]:
        if key not in actual:
            rows.append(ArgDiff(key, expected[key], None, MISSING))
        elif key not in expected:
            rows.append(ArgDiff(key, None, actual[key], EXTRA))
        else:
            rows.append(ArgDiff(key, expected[key], actual[key], SAME if expected[key] == actual[key] else CHANGED))
    return rows


def trajectory_diff(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> list[CallRow]:
    """Align two call lists; calls of the same tool with other args pair up as `changed`."""
    rows: list[CallRow] = []
    matcher = difflib.SequenceMatcher(a=[_key(c) for c in expected], b=[_key(c) for c in actual], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [CallRow(SAME, e, a, arg_diffs(e.get("args") or {}, a.get("args") or {}))
                     for e, a in zip(expected[i1:i2], actual[j1:j2])]
        else:
            rows += _pair_by_name(expected[i1:i2], actual[j1:j2])
    return rows


def _pair_by_name(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> list[CallRow]:
    rows: list[CallRow] = []
    unused = list(actual)
    for call in expected:
        twin = next((a for a in unused if a.get("name") == call.get("name")), None)
        if twin is None:
            rows.append(CallRow(MISSING, call, None))
            continue
        unused.remove(twin)
        rows.append(CallRow(CHANGED, call, twin, arg_diffs(call.get("args") or {}, twin.get("args") or {})))
    rows += [CallRow(EXTRA, None, a) for a in unused]
    return rows


_WORDS = re.compile(r"\s+|[^\s]+")


def text_diff(expected: str, actual: str) -> tuple[list[Span], list[Span]]:
    """Word-level difference: the expected text's spans and the actual text's spans."""
    a, b = _WORDS.findall(expected), _WORDS.findall(actual)
    left: list[Span] = []
    right: list[Span] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(Span("".join(a[i1:i2]), SAME))
            right.append(Span("".join(b[j1:j2]), SAME))
            continue
        if i2 > i1:
            left.append(Span("".join(a[i1:i2]), MISSING))
        if j2 > j1:
            right.append(Span("".join(b[j1:j2]), EXTRA))
    return left, right
