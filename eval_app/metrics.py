"""ADK's two reference metrics, scored by our own code with ADK's exact rules.

`tool_trajectory_avg_score` (ADK's `TrajectoryEvaluator`): each invocation
scores 1.0 when the actual tool calls match the expected ones under the match
type, else 0.0; the case score is the mean. `response_match_score` (ADK's
`RougeEvaluator`): ROUGE-1 F-measure of the actual final response against the
expected one, per invocation, averaged. A verdict is PASSED when the score is
at least the threshold. tests/eval_app/test_metrics.py proves the scores equal
ADK's evaluators' on the same invocations.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable

from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvents
from google.genai import types
from rouge_score.rouge_scorer import RougeScorer
from rouge_score.tokenizers import DefaultTokenizer

TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE_MATCH = "response_match_score"
SUPPORTED_METRICS = (TRAJECTORY, RESPONSE_MATCH)
DEFAULT_THRESHOLDS = {TRAJECTORY: 1.0, RESPONSE_MATCH: 0.8}  # ADK's DEFAULT_CRITERIA

EXACT, IN_ORDER, ANY_ORDER = "EXACT", "IN_ORDER", "ANY_ORDER"
MATCH_TYPES = (EXACT, IN_ORDER, ANY_ORDER)

PASSED, FAILED, NOT_EVALUATED = "PASSED", "FAILED", "NOT_EVALUATED"  # ADK's EvalStatus names


@dataclass(frozen=True)
class MetricSpec:
    """One metric as a run asks for it (ADK's EvalMetric + criterion, flattened)."""

    metric_name: str
    threshold: float
    match_type: str = EXACT
    ignore_args: bool = False

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"metric_name": self.metric_name, "threshold": self.threshold}
        if self.metric_name == TRAJECTORY:
            data.update(match_type=self.match_type, ignore_args=self.ignore_args)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricSpec:
        return cls(
            metric_name=data["metric_name"],
            threshold=float(data["threshold"]),
            match_type=data.get("match_type", EXACT),
            ignore_args=bool(data.get("ignore_args", False)),
        )

    def criterion(self) -> float | dict[str, Any]:
        """This metric's entry under `criteria` in ADK's test_config.json."""
        if self.metric_name == TRAJECTORY and (self.match_type != EXACT or self.ignore_args):
            return {"threshold": self.threshold, "match_type": self.match_type, "ignore_args": self.ignore_args}
        return self.threshold


@dataclass
class MetricScore:
    metric_name: str
    threshold: float
    score: float | None
    status: str

    def as_dict(self) -> dict[str, Any]:
        return {"metric_name": self.metric_name, "threshold": self.threshold, "score": self.score, "status": self.status}


@dataclass
class CaseScores:
    """Scores of one case: overall per metric, and per metric for each invocation."""

    status: str
    overall: list[MetricScore]
    per_invocation: list[list[MetricScore]] = field(default_factory=list)


# ---- tool trajectories ------------------------------------------------------


def tool_calls(invocation: Invocation | None) -> list[types.FunctionCall]:
    """The invocation's tool calls in order, from either intermediate-data shape."""
    data = invocation.intermediate_data if invocation else None
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    if isinstance(data, InvocationEvents):
        return [
            part.function_call
            for event in data.invocation_events
            if event.content
            for part in event.content.parts or []
            if part.function_call
        ]
    return []


def _same_call(actual: types.FunctionCall, expected: types.FunctionCall, ignore_args: bool) -> bool:
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def trajectory_matches(
    actual: list[types.FunctionCall], expected: list[types.FunctionCall], match_type: str, ignore_args: bool
) -> bool:
    if match_type == EXACT:
        return len(actual) == len(expected) and all(
            _same_call(a, e, ignore_args) for a, e in zip(actual, expected)
        )
    if match_type == IN_ORDER:
        # Expected calls must appear as a subsequence; a greedy scan finds one if any exists.
        position = 0
        for call in actual:
            if position < len(expected) and _same_call(call, expected[position], ignore_args):
                position += 1
        return position == len(expected)
    if match_type == ANY_ORDER:
        # Each expected call consumes the first unused actual call it matches, as ADK does.
        unused = list(actual)
        for wanted in expected:
            index = next((i for i, call in enumerate(unused) if _same_call(call, wanted, ignore_args)), None)
            if index is None:
                return False
            unused.pop(index)
        return True
    raise ValueError(f"Unknown match type {match_type!r}; expected one of {', '.join(MATCH_TYPES)}.")


def trajectory_score(actual: Invocation, expected: Invocation, spec: MetricSpec) -> float:
    matched = trajectory_matches(tool_calls(actual), tool_calls(expected), spec.match_type, spec.ignore_args)
    return 1.0 if matched else 0.0


# ---- final response ROUGE-1 -------------------------------------------------


def response_text(content: types.Content | None) -> str:
    """The text parts of a response, one per line (how ADK reads a final response)."""
    if not content or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


def _cjk(char: str) -> bool:
    code = ord(char)
    return 0x4E00 <= code <= 0x9FFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF


def _unspaced_script(char: str) -> bool:
    # Thai, Lao, Khmer and Myanmar write words without spaces between them.
    code = ord(char)
    return 0x0E00 <= code <= 0x0EFF or 0x1780 <= code <= 0x17FF or 0x1000 <= code <= 0x109F


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


class RougeTokenizer:
    """ADK's tokenizer rules for ROUGE-1, written out.

    rouge-score's own tokenizer keeps only [a-z0-9], so non-Latin text would
    always score 0. ADK normalises (NFKC, lower case), makes each CJK character
    a token, splits Thai-like scripts into base character + combining marks,
    keeps other Unicode words whole, and hands pure-ASCII words to rouge-score's
    tokenizer with the Porter stemmer.
    """

    def __init__(self) -> None:
        self._ascii = DefaultTokenizer(use_stemmer=True)

    def tokenize(self, text: str) -> list[str]:
        tokens: list[str] = []
        for word in self._spaced(unicodedata.normalize("NFKC", text).lower()).split():
            tokens.extend(self._ascii.tokenize(word) if word.isascii() else [word])
        return tokens

    @staticmethod
    def _spaced(text: str) -> str:
        out: list[str] = []
        for char in text:
            if _cjk(char):
                out.append(f" {char} ")
            elif _unspaced_script(char):
                out.append(char if _is_mark(char) else f" {char}")
            elif char.isalnum() or _is_mark(char):
                out.append(char)
            else:
                out.append(" ")
        return "".join(out)


_ROUGE_1 = RougeScorer(["rouge1"], tokenizer=RougeTokenizer())


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    return _ROUGE_1.score(reference, candidate)["rouge1"].fmeasure


def response_match_score(actual: Invocation, expected: Invocation, spec: MetricSpec) -> float:
    return rouge1_fmeasure(response_text(actual.final_response), response_text(expected.final_response))


# ---- a case -----------------------------------------------------------------

_SCORERS = {TRAJECTORY: trajectory_score, RESPONSE_MATCH: response_match_score}


def verdict(score: float | None, threshold: float) -> str:
    if score is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


def case_status(statuses: Iterable[str]) -> str:
    """ADK's case verdict: FAILED if any metric failed, PASSED if any passed, else NOT_EVALUATED."""
    status = NOT_EVALUATED
    for metric_status in statuses:
        if metric_status == FAILED:
            return FAILED
        if metric_status == PASSED:
            status = PASSED
    return status


def score_case(actual: list[Invocation], expected: list[Invocation], specs: list[MetricSpec]) -> CaseScores:
    """Score aligned invocations (one actual per expected) on every metric."""
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} actual invocations for {len(expected)} expected ones.")
    overall: list[MetricScore] = []
    per_invocation: list[list[MetricScore]] = [[] for _ in actual]
    for spec in specs:
        scorer = _SCORERS[spec.metric_name]
        scores = [scorer(a, e, spec) for a, e in zip(actual, expected)]
        for row, score in zip(per_invocation, scores):
            row.append(MetricScore(spec.metric_name, spec.threshold, score, verdict(score, spec.threshold)))
        mean = sum(scores) / len(scores) if scores else None
        overall.append(MetricScore(spec.metric_name, spec.threshold, mean, verdict(mean, spec.threshold)))
    return CaseScores(status=case_status(m.status for m in overall), overall=overall, per_invocation=per_invocation)
