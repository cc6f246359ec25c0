"""Judge models for ADK's evaluation engine: the offline scripted judge, model checks, recording.

``adkui-scripted-judge``
    A ``BaseLlm`` registered in ADK's ``LLMRegistry`` (``register()``, called by ``check_model`` and,
    in a Django process, when ADK's metric registry module is imported: eval_app/adk_registries.py),
    so any ADK criterion naming it as ``judge_model`` -- in adkui or in ADK's own ``adk eval`` /
    ``AgentEvaluator`` / ``LocalEvalService``, in any process that called ``register()`` or set
    Django up -- is judged offline. It
    recognises every judge prompt ADK 2.13 sends and answers in exactly the format ADK's parser
    reads. The answer is a pure function of the prompt (same prompt, same answer), computed by the
    rules below on the prompt's own content. Text is compared after normalising: NFKC, lower case,
    typographic quotes made plain, thousands separators dropped (``1,000`` -> ``1000``), then cut
    into word/number tokens. *Key terms* of a text are its tokens that are numbers or words of three
    letters or more that are not common English stop words.

    * ``final_response_match_v2``: **valid** when the agent response contains the reference's
      tokens as one phrase (an empty reference is always met), or when it contains every number
      of the reference and at least three quarters (rounded up) of the reference's other key
      terms; otherwise **invalid**. The reasoning names the key terms found and missing.
    * Rubric metrics (``rubric_based_final_response_quality_v1``, ``rubric_based_tool_use_quality_v1``,
      ``rubric_based_multi_turn_trajectory_quality_v1``): each rubric is judged on the text the
      prompt shows -- the final answer, the tool calls and responses, or the agent's lines of the
      conversation history (its replies and tool calls) respectively. A rubric with quoted terms
      (``'...'`` at word boundaries, ``"..."`` or backticks) is satisfied (**yes**) when every
      quoted term occurs as a phrase; when the rubric says, outside its quotes, ``not``, ``never``,
      ``no``, ``without`` or ``avoid``, it is satisfied when none of them occurs. A rubric
      without quotes is satisfied when at least half (rounded up) of its key terms occur, words
      about the judging itself (agent, response, answer, mentions, ...) left out; a rubric with no
      key term left is not applicable, hence **yes**. The rationale names the terms found/missing.
    * ``hallucinations_v1``: the segmenter splits the response at line breaks and sentence ends;
      the validator labels a sentence ``not_applicable`` when it is a question, has no key term
      or only pleasantries (hello, thanks, enjoy your trip, ...), ``supported`` when every number
      in it and at least half of its key terms occur in the context (the supporting excerpt is
      the context line sharing most key terms), else ``unsupported``.
    * ``per_turn_user_simulator_quality_v1``: the plan is cut into steps (see the simulator below).
      A turn is **valid** when it is the next step not yet asked (the same phrase, or at least half
      of the step's key terms) and repeats no earlier user turn; the stop signal is valid exactly
      when every step has been asked.
    * The user simulator (``LlmBackedUserSimulator``): ADK itself sends the scenario's
      ``starting_prompt`` first; the scripted model then answers with the conversation plan's
      steps in order, and with ADK's stop signal once every step has been sent. The plan is cut
      into steps one per non-empty line (bullets and numbering stripped); a plan on one line is cut
      into sentences. Plan and history are read under ADK's ``# Conversation Plan`` and
      ``# Conversation History`` headers; custom simulator instructions without them cannot be
      followed: the model then answers with an error, which ADK reports as a failed inference.

    A prompt it does not recognise is answered with an error response (never a made-up verdict),
    so ADK records the metric as not evaluated.

Vertex-only metrics
    ``safety_v1``, ``response_evaluation_score`` and the ``multi_turn_*_v1`` metrics are computed by
    the Vertex AI Gen AI Eval service, not by a judge model: they cannot run offline at all and need
    ``GOOGLE_API_KEY`` or ``GOOGLE_CLOUD_PROJECT`` + ``GOOGLE_CLOUD_LOCATION``.
    ``check_metric_available(name)`` says so before a run starts.

``recording_registry(base, sink)``
    A fork of an ADK ``MetricEvaluatorRegistry`` whose judge evaluators wrap their judge model:
    every judge call's raw text is appended to ``sink`` with the verdicts ADK's own parsing gives
    (the evaluator's ``convert_auto_rater_response_to_score``, its rubric response parser,
    ``hallucinations_v1``'s sentence parsers), rubric by rubric, and the verdicts ADK dropped
    because their property matched no rubric. ``invocation_index`` is the position of the judged
    invocation in the case's conversation (for ``per_turn_user_simulator_quality_v1`` the final
    stop-signal check gets the index one past the last turn); ``sample`` counts the judge calls for
    that invocation in call order, so with ``judge_model_options.num_samples = n`` the samples are
    ``0..n-1``. Each entry also has ``score`` (the sample's score as ADK parsed it), and where it
    applies ``stage`` (``segmenter``/``validator`` for ``hallucinations_v1``, whose ``sample`` then
    counts the response segments judged; ``turn``/``stop_signal`` for the simulator quality
    metric) and ``error`` (the judge call failed or answered with an error; nothing was parsed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncGenerator
import importlib.util
import json
import math
import os
import re
import types
from typing import TYPE_CHECKING
from typing import Any
from typing import Optional
import unicodedata

from google.adk.evaluation import hallucinations_v1
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_metrics import JudgeModelOptions
from google.adk.evaluation.eval_metrics import LlmBackedUserSimulatorCriterion
from google.adk.evaluation.eval_metrics import PrebuiltMetrics
from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator
from google.adk.evaluation.llm_as_judge import LlmAsJudge
from google.adk.evaluation.llm_as_judge_utils import get_text_from_content
from google.adk.evaluation.rubric_based_evaluator import RubricBasedEvaluator
from google.adk.evaluation.rubric_based_evaluator import RubricResponse
from google.adk.evaluation.simulation.llm_backed_user_simulator import LlmBackedUserSimulatorConfig
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1
from google.adk.evaluation.simulation.user_simulator_provider import UserSimulatorProvider
from google.adk.models import BaseLlm
from google.adk.models import LLMRegistry
from google.adk.models import LlmRequest
from google.adk.models import LlmResponse
from google.adk.models.google_llm import Gemini
from google.adk.utils.context_utils import Aclosing
from google.genai import types as genai_types

if TYPE_CHECKING:
    # For its type only: ADK's registry module imports Vertex AI's SDK (seconds); this module is
    # imported by every process (the app's ready(), the URLconf's views), few of which run evals.
    from google.adk.evaluation.metric_evaluator_registry import MetricEvaluatorRegistry

__all__ = [
    "SCRIPTED_JUDGE",
    "VERTEX_METRICS",
    "ScriptedJudge",
    "check_metric_available",
    "check_model",
    "default_judge_model",
    "plan_steps",
    "recording_registry",
    "register",
    "user_simulator_provider",
]

SCRIPTED_JUDGE = "adkui-scripted-judge"

VERTEX_METRICS = frozenset(
    metric.value
    for metric in (
        PrebuiltMetrics.SAFETY_V1,
        PrebuiltMetrics.RESPONSE_EVALUATION_SCORE,
        PrebuiltMetrics.MULTI_TURN_TASK_SUCCESS_V1,
        PrebuiltMetrics.MULTI_TURN_TRAJECTORY_QUALITY_V1,
        PrebuiltMetrics.MULTI_TURN_TOOL_USE_QUALITY_V1,
    )
)
"""Metrics ADK computes on Vertex AI's Gen AI Eval service: no judge model, no offline run."""

_DEFAULT_STOP_SIGNAL = LlmBackedUserSimulatorCriterion.model_fields["stop_signal"].default


# --- Text rules ---------------------------------------------------------------

_STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto as is are was
    were be been being am do does did doing have has had having it its this that these those there
    here i me my we our you your he she him her they them their what which who whom whose when
    where why how all any both each few more most other some such only own same so than too very
    can will just should would could may might must shall also not no nor yes up down out over
    under again once about against between through during before after above below off per via
    let lets get got please thanks thank""".split()
)

# Words that describe the judging rather than what is judged ("The response mentions ...").
_RUBRIC_WORDS = frozenset(
    """agent agents response responses answer answers final user users reply replies mention
    mentions mentioned include includes included including contain contains contained containing
    state states stated say says said provide provides provided correct correctly properly
    clearly appropriate appropriately tool tools call calls called calling use uses used using
    model assistant property rubric output outputs message messages give gives given turn turns
    conversation""".split()
)

# Sentences made only of these make no factual claim (hallucinations_v1: not_applicable).
_PLEASANTRIES = frozenset(
    """hello hi hey welcome thanks thank glad happy hope help helps nice great good day enjoy trip
    wonderful sure okay anything else questions question assist""".split()
)

_NEGATION = re.compile(r"\b(not|never|no|without|avoid|avoids|don't|doesn't|didn't)\b", re.IGNORECASE)
# A quote opens and closes at a word boundary, so the apostrophe of "agent's" opens nothing.
_QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)|\"([^\"]+)\"|`([^`]+)`")
_SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_BULLET = re.compile(r"^\s*(?:[-*\u2022>]+|\d+[.)]|[a-z][.)])\s+", re.IGNORECASE)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "").translate(_SMART_QUOTES).lower()
    return _THOUSANDS.sub("", text)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_normalise(text))


def _is_number(token: str) -> bool:
    return token[:1].isdigit()


def _key_terms(text: str, *, ignore: frozenset[str] = frozenset()) -> list[str]:
    """Numbers and words of 3+ letters that are no stop word, once each, in order."""
    terms = [
        token
        for token in _tokens(text)
        if _is_number(token) or (len(token) >= 3 and token not in _STOPWORDS and token not in ignore)
    ]
    return list(dict.fromkeys(terms))


def _contains_phrase(haystack: str, needle: str) -> bool:
    needle_tokens = _tokens(needle)
    if not needle_tokens:
        return False
    return f" {' '.join(needle_tokens)} " in f" {' '.join(_tokens(haystack))} "


def _half(count: int) -> int:
    return math.ceil(count / 2)


def _listing(terms: list[str]) -> str:
    return ", ".join(f"'{term}'" for term in terms) if terms else "none"


def plan_steps(plan: str) -> list[str]:
    """The steps of a conversation plan: one per non-empty line, or per sentence of a one-liner."""
    lines = [_BULLET.sub("", line).strip() for line in (plan or "").splitlines()]
    lines = [line for line in lines if line]
    if len(lines) == 1:
        return [part.strip() for part in _SENTENCE_END.split(lines[0]) if part.strip()]
    return lines


def _split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("|"):
            sentences.append(stripped)
            continue
        sentences.extend(part.strip() for part in _SENTENCE_END.split(stripped) if part.strip())
    return sentences


def _last_section(prompt: str, tag: str) -> Optional[str]:
    """The text of the last ``<tag>...</tag>`` block: ADK puts the real inputs after its examples."""
    start = prompt.rfind(f"<{tag}>")
    if start < 0:
        return None
    start += len(tag) + 2
    end = prompt.find(f"</{tag}>", start)
    return prompt[start:] if end < 0 else prompt[start:end]


def _between(prompt: str, begin: str, end: str) -> Optional[str]:
    start = prompt.rfind(begin)
    if start < 0:
        return None
    start += len(begin)
    stop = prompt.find(end, start)
    return None if stop < 0 else prompt[start:stop]


# --- Verdict rules -----------------------------------------------------------


def response_match_verdict(response: str, reference: str) -> tuple[bool, str]:
    """``final_response_match_v2``'s rule: (valid, reasoning)."""
    if not _tokens(reference):
        return True, "The reference response is empty, so the agent response misses nothing of it."
    if _contains_phrase(response, reference):
        return True, "The agent response contains the reference response."
    terms = _key_terms(reference)
    present = set(_tokens(response))
    numbers = [term for term in terms if _is_number(term)]
    words = [term for term in terms if not _is_number(term)]
    missing_numbers = [number for number in numbers if number not in present]
    found_words = [word for word in words if word in present]
    missing_words = [word for word in words if word not in present]
    needed = math.ceil(len(words) * 3 / 4)
    valid = not missing_numbers and len(found_words) >= needed
    facts = [f"It has {len(found_words)} of the reference's {len(words)} key terms ({needed} needed)"]
    if found_words:
        facts.append(f"found {_listing(found_words)}")
    if missing_words:
        facts.append(f"missing {_listing(missing_words)}")
    if numbers:
        facts.append(f"numbers missing: {_listing(missing_numbers)}" if missing_numbers else "every number present")
    verdict = "matches" if valid else "does not match"
    return valid, f"The agent response {verdict} the reference's key content. " + "; ".join(facts) + "."


def rubric_verdict(rubric: str, text: str) -> tuple[bool, str]:
    """A rubric's rule on the judged text: (satisfied, rationale)."""
    quoted = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(rubric)]
    quoted = [term for term in quoted if _tokens(term)]
    if quoted:
        found = [term for term in quoted if _contains_phrase(text, term)]
        missing = [term for term in quoted if term not in found]
        if _NEGATION.search(_QUOTED.sub(" ", rubric)):
            if found:
                return False, f"The rubric forbids {_listing(quoted)} and the text has {_listing(found)}."
            return True, f"The rubric forbids {_listing(quoted)} and the text has none of them."
        if missing:
            return False, f"The text lacks {_listing(missing)} (has {_listing(found)})."
        return True, f"The text has every quoted term: {_listing(found)}."
    terms = _key_terms(rubric, ignore=_RUBRIC_WORDS)
    if not terms:
        return True, "The rubric names no key term to look for, so it is not applicable."
    present = set(_tokens(text))
    found = [term for term in terms if term in present]
    missing = [term for term in terms if term not in present]
    needed = _half(len(terms))
    verdict = len(found) >= needed
    return verdict, (
        f"The text has {len(found)} of the rubric's {len(terms)} key terms "
        f"({_listing(found)}; missing {_listing(missing)}); {needed} are needed."
    )


def sentence_label(sentence: str, context: str) -> tuple[str, str, Optional[str]]:
    """``hallucinations_v1``'s validator rule: (label, rationale, supporting excerpt)."""
    terms = _key_terms(sentence)
    if sentence.strip().endswith("?") or not terms or set(terms) <= _PLEASANTRIES:
        return "not_applicable", "A question, greeting or sentence without a claim to check.", None
    present = set(_tokens(context))
    numbers = [term for term in terms if _is_number(term)]
    words = [term for term in terms if not _is_number(term)]
    missing_numbers = [number for number in numbers if number not in present]
    found_words = [word for word in words if word in present]
    needed = _half(len(words))
    supported = not missing_numbers and len(found_words) >= needed
    facts = [f"the context has {len(found_words)} of its {len(words)} key terms "
             f"({_listing(found_words)}; {needed} needed)"]
    if numbers:
        facts.append(f"lacks its numbers {_listing(missing_numbers)}" if missing_numbers else "has all its numbers")
    rationale = ("Supported: " if supported else "Unsupported: ") + ", ".join(facts) + "."
    if supported:
        return "supported", rationale, _best_excerpt(terms, context)
    return "unsupported", rationale, None


def _best_excerpt(terms: list[str], context: str) -> Optional[str]:
    best, best_count = None, 0
    for line in context.splitlines():
        count = len(set(terms) & set(_tokens(line)))
        if count > best_count:
            best, best_count = line.strip(), count
    return best


def _matches_step(message: str, step: str) -> bool:
    if _contains_phrase(message, step):
        return True
    terms = _key_terms(step)
    present = set(_tokens(message))
    return bool(terms) and len([term for term in terms if term in present]) >= _half(len(terms))


# --- Answering ADK's prompts -------------------------------------------------


class UnknownPrompt(ValueError):
    """The scripted judge was sent a prompt it has no rule for."""


def _answer_final_response_match(prompt: str) -> str:
    inputs = prompt[prompt.rfind("Below are the inputs:") :]
    response = _between(inputs, '"Agent response": ', ',\n  "Reference response": ')
    reference = _between(inputs, '"Reference response": ', ",\n}")
    if response is None or reference is None:
        raise UnknownPrompt("final_response_match_v2 prompt without agent/reference response")
    valid, reasoning = response_match_verdict(response, reference)
    answer = {"reasoning": reasoning, "is_the_agent_response_valid": "valid" if valid else "invalid"}
    return json.dumps(answer, indent=2)


def _bullet_properties(section: str) -> list[tuple[Optional[str], str]]:
    """Rubrics ADK lists as ``*  [id: X] text`` lines (continuation lines joined)."""
    properties: list[tuple[Optional[str], str]] = []
    for line in section.splitlines():
        match = re.match(r"^\*\s+\[id: (.*?)\] ?(.*)$", line.strip())
        if match:
            properties.append((match.group(1), match.group(2)))
        elif line.strip() and properties:
            rubric_id, text = properties[-1]
            properties[-1] = (rubric_id, f"{text} {line.strip()}")
    return properties


def _json_properties(section: str) -> list[tuple[Optional[str], str]]:
    try:
        items = json.loads(section)
    except json.JSONDecodeError as error:
        raise UnknownPrompt(f"rubric properties are not JSON: {error}") from error
    return [(item.get("id"), item.get("property", "")) for item in items]


def _rubric_blocks(properties: list[tuple[Optional[str], str]], text: str) -> str:
    blocks = []
    for rubric_id, rubric in properties:
        satisfied, rationale = rubric_verdict(rubric, text)
        lines = [f"ID: {rubric_id}"] if rubric_id else []
        lines += [
            f"Property: {' '.join(rubric.split())}",
            f"Rationale: {' '.join(rationale.split())}",
            f"Verdict: {'yes' if satisfied else 'no'}",
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _answer_rubrics(prompt: str, judged_tag: str, *, json_properties: bool = False) -> str:
    section = _last_section(prompt, "properties")
    judged = _last_section(prompt, judged_tag)
    if section is None or judged is None:
        raise UnknownPrompt(f"rubric prompt without <properties> or <{judged_tag}>")
    properties = _json_properties(section) if json_properties else _bullet_properties(section)
    if judged_tag == "conversation_history":  # the agent is judged, not what the user said
        judged = "\n".join(line for line in judged.splitlines() if not line.startswith("USER TURN"))
    return _rubric_blocks(properties, judged)


def _answer_segmenter(prompt: str) -> str:
    response = _between(prompt, "**Response Begin**\n", "\n**Response End**")
    if response is None:
        raise UnknownPrompt("hallucinations segmenter prompt without a response block")
    return "\n".join(f"<sentence>{sentence}</sentence>" for sentence in _split_sentences(response))


def _answer_validator(prompt: str) -> str:
    context = _between(prompt, "**Context Begin**\n", "\n**Context End**")
    sentences_block = _between(prompt, "**Sentences Begin**\n", "\n**Sentences End**")
    if context is None or sentences_block is None:
        raise UnknownPrompt("hallucinations validator prompt without context or sentences")
    blocks = []
    for sentence in hallucinations_v1._parse_sentences(sentences_block):  # noqa: SLF001 - ADK's own parser
        label, rationale, excerpt = sentence_label(sentence, context)
        blocks.append(
            f"sentence: {' '.join(sentence.split())}\nlabel: {label}\nrationale: {rationale}\n"
            f"supporting_excerpt: {excerpt or 'null'}\ncontradicting_excerpt: null"
        )
    return "\n\n".join(blocks)


def _stop_signal(prompt: str) -> str:
    """The stop signal ADK wrote into the prompt ("Output `</finished>` ..."), else ADK's default."""
    match = re.search(r"\b[Oo]utputs? `([^`\n]+)`", prompt)
    return match.group(1) if match else _DEFAULT_STOP_SIGNAL


def _user_turns(paragraphs: list[str]) -> list[str]:
    return [paragraph[len("user: ") :] for paragraph in paragraphs if paragraph.startswith("user: ")]


def _section(prompt: str, header: str, *, until: tuple[str, ...] = ()) -> Optional[str]:
    """The text under ADK's ``# header`` line, up to the last of the ``until`` headers after it.

    Only the headers ADK's template puts next end a section, so an agent reply with markdown
    headers of its own stays whole.
    """
    marker = f"\n# {header}\n"
    start = prompt.find(marker)
    if start < 0:
        return None
    start += len(marker)
    ends = [position for position in (prompt.rfind(f"\n# {name}\n") for name in until) if position >= start]
    return (prompt[start : min(ends)] if ends else prompt[start:]).strip()


def _answer_simulator_quality(prompt: str) -> str:
    stop_signal = _stop_signal(prompt)
    plan = _section(prompt, "Conversation Plan", until=("Conversation History",))
    history = _section(prompt, "Conversation History", until=("Persona Description", "Generated User Response"))
    generated = _section(prompt, "Generated User Response")
    if plan is None or history is None or generated is None:
        raise UnknownPrompt("user simulator quality prompt without plan, history or generated response")
    previous = _user_turns(history.split("\n\n"))
    valid, reasoning = _simulated_turn_verdict(generated, previous, plan_steps(plan), stop_signal)
    criterion = "STOP_CONDITION_FOLLOWED" if stop_signal in generated else "CONVERSATION_PLAN_FOLLOWED"
    answer = {
        "criteria": [{"name": criterion, "reasoning": reasoning, "passes": valid}],
        "is_valid": valid,
    }
    return json.dumps(answer, indent=2)


def _simulated_turn_verdict(
    generated: str, previous: list[str], steps: list[str], stop_signal: str
) -> tuple[bool, str]:
    asked = max(len(previous) - 1, 0)  # the first user turn is the scenario's starting prompt
    if stop_signal in generated:
        if asked >= len(steps):
            return True, f"All {len(steps)} plan steps were asked before the stop signal."
        return False, f"The stop signal came after {asked} of {len(steps)} plan steps."
    if any(_tokens(generated) == _tokens(turn) for turn in previous):
        return False, "The user turn repeats an earlier user turn."
    if asked >= len(steps):
        return False, f"Every plan step was already asked; the stop signal {stop_signal} was due."
    if _matches_step(generated, steps[asked]):
        return True, f"The user turn follows plan step {asked + 1}: {steps[asked]!r}."
    return False, f"The user turn does not follow plan step {asked + 1}: {steps[asked]!r}."


def _answer_user_simulator(prompt: str) -> str:
    plan = _section(prompt, "Conversation Plan", until=("Conversation History",))
    history = _section(prompt, "Conversation History")
    if plan is None or history is None:
        raise UnknownPrompt("user simulator prompt without '# Conversation Plan' and '# Conversation History'")
    previous = _user_turns(history.split("\n\n"))
    steps = plan_steps(plan)
    asked = max(len(previous) - 1, 0)  # the first user turn is the scenario's starting prompt
    return steps[asked] if asked < len(steps) else _stop_signal(prompt)


def answer(prompt: str) -> str:
    """The scripted judge's answer to one of ADK's prompts (raises UnknownPrompt)."""
    if "You are a Simulated User designed to test an AI Agent" in prompt:
        return _answer_user_simulator(prompt)
    if "evaluating the quality of a User Simulator" in prompt:
        return _answer_simulator_quality(prompt)
    if '"is_the_agent_response_valid"' in prompt:
        return _answer_final_response_match(prompt)
    if "**Sentences Begin**" in prompt and "**Context Begin**" in prompt:
        return _answer_validator(prompt)
    if "**Response Begin**" in prompt:
        return _answer_segmenter(prompt)
    if "<properties>" in prompt:
        if "<conversation_history>" in prompt:
            return _answer_rubrics(prompt, "conversation_history", json_properties=True)
        if "<final_answer>" in prompt:
            return _answer_rubrics(prompt, "final_answer")
        return _answer_rubrics(prompt, "response")
    raise UnknownPrompt("not one of ADK's judge or user simulator prompts")


def _prompt_text(llm_request: LlmRequest) -> str:
    texts = [get_text_from_content(content) or "" for content in llm_request.contents if content.role == "user"]
    return "\n".join(texts)


def _usage(prompt: str, reply: str) -> genai_types.GenerateContentResponseUsageMetadata:
    prompt_tokens, reply_tokens = len(prompt) // 4 + 1, len(reply) // 4 + 1
    return genai_types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt_tokens,
        candidates_token_count=reply_tokens,
        total_token_count=prompt_tokens + reply_tokens,
    )


class ScriptedJudge(BaseLlm):
    """``adkui-scripted-judge``: answers ADK's judge and user simulator prompts by fixed rules."""

    model: str = SCRIPTED_JUDGE

    @classmethod
    def supported_models(cls) -> list[str]:
        return [re.escape(SCRIPTED_JUDGE)]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        prompt = _prompt_text(llm_request)
        try:
            reply = answer(prompt)
        except UnknownPrompt as error:
            yield LlmResponse(
                error_code="SCRIPTED_JUDGE_UNKNOWN_PROMPT",
                error_message=f"{SCRIPTED_JUDGE} has no rule for this prompt: {error}",
                usage_metadata=_usage(prompt, ""),
                model_version=self.model,
            )
            return
        yield LlmResponse(
            content=genai_types.Content(role="model", parts=[genai_types.Part.from_text(text=reply)]),
            partial=False,
            finish_reason=genai_types.FinishReason.STOP,
            usage_metadata=_usage(prompt, reply),
            model_version=self.model,
        )


def register() -> None:
    """Registers ``adkui-scripted-judge`` in ADK's LLMRegistry (idempotent)."""
    try:
        if LLMRegistry.resolve(SCRIPTED_JUDGE) is ScriptedJudge:
            return  # registering again would log "Updating LLM class" and clear ADK's lookup cache
    except ValueError:  # no class matches the name yet
        pass
    LLMRegistry.register(ScriptedJudge)


# --- Choosing and checking models --------------------------------------------


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def _gemini_configured() -> bool:
    keys = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    return any(os.environ.get(key) for key in keys) or _truthy(os.environ.get("GOOGLE_GENAI_USE_VERTEXAI"))


def default_judge_model() -> str:
    """ADK's default Gemini judge when Gemini is configured, else the offline scripted judge."""
    if _gemini_configured():
        return JudgeModelOptions().judge_model
    return SCRIPTED_JUDGE


def check_model(name: str) -> None:
    """Raises ValueError (a message for people) when ADK cannot load the model ``name``.

    Nothing goes over the network: a Gemini name needs GOOGLE_API_KEY (or GEMINI_API_KEY) or
    GOOGLE_GENAI_USE_VERTEXAI, a LiteLLM name needs the litellm package.
    """
    name = (name or "").strip()
    if not name:
        raise ValueError("No model name given.")
    register()  # the scripted judge is known before any eval has imported ADK's registries
    # Importing litellm would otherwise fetch its price list from GitHub.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        model_class = LLMRegistry.resolve(name)
    except (ValueError, ImportError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"ADK cannot load the model {name!r}: {first_line or 'no model class matches it'}.") from error
    if issubclass(model_class, Gemini) and not _gemini_configured():
        raise ValueError(
            f"The Gemini model {name!r} needs GOOGLE_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI=1 with a "
            f"Google Cloud project); without it use {SCRIPTED_JUDGE!r}."
        )
    if model_class.__name__ == "LiteLlm" and importlib.util.find_spec("litellm") is None:
        raise ValueError(f"The model {name!r} needs LiteLLM: pip install litellm.")


def metric_unavailable_reason(metric_name: str) -> str:
    """Why a metric cannot run here ("" when it can): what a Vertex-only metric needs and nothing configures."""
    if metric_name not in VERTEX_METRICS:
        return ""
    has_key = bool(os.environ.get("GOOGLE_API_KEY"))
    has_project = bool(os.environ.get("GOOGLE_CLOUD_PROJECT")) and bool(os.environ.get("GOOGLE_CLOUD_LOCATION"))
    if has_key or has_project:
        return ""
    return ("computed by Vertex AI's Gen AI Eval service, not by a judge model, so it cannot run offline: "
            "set GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION")


def check_metric_available(metric_name: str) -> None:
    """Raises ValueError when a metric needs Vertex AI and nothing is configured for it."""
    if reason := metric_unavailable_reason(metric_name):
        raise ValueError(f"{metric_name} is {reason}.")


def user_simulator_provider(run_user_simulator_config: Optional[dict], judge_model: str) -> UserSimulatorProvider:
    """ADK's provider of user simulators for conversation_scenario cases.

    ``run_user_simulator_config`` is ADK's ``user_simulator_config`` JSON (parsed by ADK's own
    EvalConfig); the simulator model is the run's judge model (default: ``default_judge_model()``)
    unless the config names a ``model`` itself.
    """
    model = judge_model or default_judge_model()
    if not run_user_simulator_config:
        return UserSimulatorProvider(LlmBackedUserSimulatorConfig(model=model))
    config = EvalConfig(user_simulator_config=run_user_simulator_config).user_simulator_config
    if "model" in type(config).model_fields and "model" not in config.model_fields_set:
        config = config.model_copy(update={"model": model})
    return UserSimulatorProvider(config)


# --- Recording judge calls ---------------------------------------------------


class _RecordingJudge:
    """Stands in for an evaluator's judge model and reports every call to the evaluator."""

    def __init__(self, inner: Any, evaluator: Any) -> None:
        self._inner = inner
        self._evaluator = evaluator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        ticket = self._evaluator._adkui_ticket(llm_request)
        recorded = False
        try:
            async with Aclosing(self._inner.generate_content_async(llm_request, stream=stream)) as agen:
                async for response in agen:
                    if not recorded and not response.partial:
                        recorded = True
                        self._evaluator._adkui_record(ticket, llm_request, response)
                    yield response
        except Exception as error:
            if not recorded:
                self._evaluator._adkui_emit(ticket, raw="", error=f"{type(error).__name__}: {error}")
            raise


class _Recorder:
    """Mixin put in front of an ADK judge evaluator class by ``recording_registry``."""

    _adkui_sink: list[dict]
    _adkui_model_attribute = "_judge_model"

    def __init__(self, eval_metric: Any) -> None:
        super().__init__(eval_metric)
        self._adkui_invocations: list[Any] = []
        self._adkui_samples: dict[tuple, int] = defaultdict(int)
        self._adkui_current: dict[str, Any] = {"invocation_index": None, "stage": None}
        self._adkui_prompts: dict[str, list[Optional[int]]] = defaultdict(list)
        self._adkui_prompt_calls: dict[str, int] = defaultdict(int)
        model = getattr(self, self._adkui_model_attribute)
        setattr(self, self._adkui_model_attribute, _RecordingJudge(model, self))

    async def evaluate_invocations(self, actual_invocations, expected_invocations=None, conversation_scenario=None):
        self._adkui_invocations = list(actual_invocations)
        return await super().evaluate_invocations(actual_invocations, expected_invocations, conversation_scenario)

    def _adkui_index_of(self, invocation: Any) -> Optional[int]:
        return next((i for i, known in enumerate(self._adkui_invocations) if known is invocation), None)

    def _adkui_locate(self, llm_request: LlmRequest) -> dict[str, Any]:
        return dict(self._adkui_current)

    def _adkui_ticket(self, llm_request: LlmRequest) -> dict[str, Any]:
        ticket = self._adkui_locate(llm_request)
        key = (ticket["invocation_index"], ticket["stage"])
        ticket["sample"] = self._adkui_samples[key]
        self._adkui_samples[key] += 1
        return ticket

    def _adkui_record(self, ticket: dict, llm_request: LlmRequest, response: LlmResponse) -> None:
        raw = get_text_from_content(response.content) or ""
        if response.error_code:
            self._adkui_emit(ticket, raw=raw, error=f"{response.error_code}: {response.error_message or ''}".strip())
            return
        verdicts, dropped, score = self._adkui_parse(ticket, response, raw)
        self._adkui_emit(ticket, raw=raw, verdicts=verdicts, dropped=dropped, score=score)

    def _adkui_parse(self, ticket: dict, response: LlmResponse, raw: str) -> tuple[list, list, Optional[float]]:
        raise NotImplementedError

    def _adkui_emit(self, ticket, *, raw, verdicts=(), dropped=(), score=None, error=None) -> None:
        entry = {
            "metric_name": self._eval_metric.metric_name,
            "invocation_index": ticket["invocation_index"],
            "sample": ticket["sample"],
            "raw": raw,
            "verdicts": list(verdicts),
            "dropped": list(dropped),
            "score": score,
        }
        if ticket.get("stage"):
            entry["stage"] = ticket["stage"]
        if error:
            entry["error"] = error
        self._adkui_sink.append(entry)


class _LlmAsJudgeRecorder(_Recorder):
    """For ADK's ``LlmAsJudge`` evaluators: one prompt per invocation, ``num_samples`` calls each."""

    def format_auto_rater_prompt(self, actual, expected):
        prompt = super().format_auto_rater_prompt(actual, expected)
        self._adkui_prompts[prompt].append(self._adkui_index_of(actual))
        return prompt

    def _adkui_locate(self, llm_request: LlmRequest) -> dict[str, Any]:
        # ADK sends each invocation's num_samples calls in invocation order; two invocations with
        # the very same prompt share it, so its calls are dealt out num_samples at a time.
        prompt = _prompt_text(llm_request)
        indices = self._adkui_prompts.get(prompt) or [None]
        calls = self._adkui_prompt_calls[prompt]
        self._adkui_prompt_calls[prompt] += 1
        position = min(calls // self._judge_model_options.num_samples, len(indices) - 1)
        return {"invocation_index": indices[position], "stage": None}

    def _adkui_parse(self, ticket, response, raw):
        score = self.convert_auto_rater_response_to_score(response).score
        return [_valid_or_not("is_the_agent_response_valid", score, raw)], [], score


class _RubricRecorder(_LlmAsJudgeRecorder):
    """For ADK's rubric evaluators: verdicts rubric by rubric, and the ones ADK dropped."""

    def _adkui_parse(self, ticket, response, raw):
        score = self.convert_auto_rater_response_to_score(response).score
        verdicts, dropped = [], []
        for rubric_response in self._auto_rater_response_parser.parse(raw):
            rubric_scores = self.convert_auto_rater_response_to_score(_single_rubric_response(rubric_response))
            verdict = {
                "property": rubric_response.property_text,
                "verdict": _yes_no(rubric_response.score),
                "rationale": rubric_response.rationale,
            }
            if rubric_scores.rubric_scores:
                verdicts.append({"rubric_id": rubric_scores.rubric_scores[0].rubric_id, **verdict})
            else:
                dropped.append(verdict)
        return verdicts, dropped, score


class _HallucinationsRecorder(_Recorder):
    """For ``hallucinations_v1``: a segmenter and a validator call per response segment."""

    def _get_steps_to_evaluate(self, actual):
        self._adkui_current = {"invocation_index": self._adkui_index_of(actual), "stage": None}
        return super()._get_steps_to_evaluate(actual)

    def _adkui_locate(self, llm_request):
        prompt = _prompt_text(llm_request)
        stage = "segmenter" if prompt.startswith(self.segmenter_prompt.split("{response}")[0]) else "validator"
        return {"invocation_index": self._adkui_current["invocation_index"], "stage": stage}

    def _adkui_parse(self, ticket, response, raw):
        if ticket["stage"] == "segmenter":
            return [], [], None
        results = hallucinations_v1._parse_validation_results(raw)  # noqa: SLF001 - ADK's own parser
        verdicts = [
            {"rubric_id": None, "property": result["sentence"], "verdict": result["label"],
             "rationale": result["rationale"]}
            for result in results
        ]
        return verdicts, [], None


class _UserSimulatorQualityRecorder(_Recorder):
    """For ``per_turn_user_simulator_quality_v1``: one judged user turn per call, stop check last."""

    _adkui_model_attribute = "_llm"

    async def _evaluate_intermediate_turn(self, invocation_at_step, invocation_history, conversation_scenario):
        stage = "stop_signal" if invocation_at_step.invocation_id == "stop_signal_proxy_invocation" else "turn"
        self._adkui_current = {"invocation_index": len(invocation_history), "stage": stage}
        return await super()._evaluate_intermediate_turn(invocation_at_step, invocation_history, conversation_scenario)

    def _adkui_parse(self, ticket, response, raw):
        score = self._convert_llm_response_to_score(response).score
        return [_valid_or_not("is_valid", score, raw)], [], score


def _valid_or_not(prop: str, score: Optional[float], raw: str) -> dict[str, Any]:
    """A judge's one valid/invalid verdict (1.0 / 0.0; None otherwise), its "reasoning" the rationale."""
    label = {1.0: "valid", 0.0: "invalid"}.get(score)
    return {"rubric_id": None, "property": prop, "verdict": label, "rationale": _json_string_field(raw, "reasoning")}


def _yes_no(score: Optional[float]) -> Optional[str]:
    return {1.0: "yes", 0.0: "no"}.get(score)


def _single_rubric_response(rubric_response: RubricResponse) -> LlmResponse:
    """One parsed rubric verdict written back in the judge's format, to ask ADK where it maps."""
    lines = [f"ID: {rubric_response.rubric_id}"] if rubric_response.rubric_id else []
    lines += [
        f"Property: {rubric_response.property_text or ''}",
        f"Rationale: {rubric_response.rationale or ''}",
        f"Verdict: {_yes_no(rubric_response.score) or 'unclear'}",
    ]
    text = "\n".join(lines)
    return LlmResponse(content=genai_types.Content(role="model", parts=[genai_types.Part.from_text(text=text)]))


def _json_string_field(raw: str, field: str) -> str:
    """Every ``"field": "..."`` string value in a judge's JSON-ish answer, joined."""
    values = []
    for match in re.finditer(rf'"{field}"\s*:\s*("(?:[^"\\]|\\.)*")', raw):
        try:
            values.append(json.loads(match.group(1)))
        except json.JSONDecodeError:
            values.append(match.group(1).strip('"'))
    return " ".join(values)


def _recorder_for(evaluator_class: type) -> Optional[type]:
    if issubclass(evaluator_class, RubricBasedEvaluator):
        return _RubricRecorder
    if issubclass(evaluator_class, LlmAsJudge):
        return _LlmAsJudgeRecorder
    if issubclass(evaluator_class, HallucinationsV1Evaluator):
        return _HallucinationsRecorder
    if issubclass(evaluator_class, PerTurnUserSimulatorQualityV1):
        return _UserSimulatorQualityRecorder
    return None


def _recording_class(evaluator_class: type, recorder: type, sink: list[dict]) -> type:
    def fill(namespace: dict) -> None:
        namespace["_adkui_sink"] = sink
        namespace["__module__"] = __name__

    return types.new_class(f"Recording{evaluator_class.__name__}", (recorder, evaluator_class), exec_body=fill)


def recording_registry(base: MetricEvaluatorRegistry, sink: list[dict]) -> MetricEvaluatorRegistry:
    """A fork of ``base`` whose judge evaluators append every judge call to ``sink``."""
    registry = base.fork()
    for metric_info in registry.get_registered_metrics():
        evaluator_class = registry._registry[metric_info.metric_name][0]  # noqa: SLF001 - no public getter
        recorder = _recorder_for(evaluator_class)
        if recorder is not None:
            registry.register_evaluator(metric_info, _recording_class(evaluator_class, recorder, sink))
    return registry

