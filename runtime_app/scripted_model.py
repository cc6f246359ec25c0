"""An offline, scripted LLM for Google ADK.

``ScriptedModel`` is a ``google.adk.models.BaseLlm`` whose replies are data.
Give it to an ``LlmAgent`` and a real ADK ``Runner`` runs the whole LLM flow
(instructions, tools, state, transfers, streaming, callbacks, persistence)
with no network and no API key::

    from google.adk.agents import LlmAgent
    from runtime_app.scripted_model import Call, Reply, Rule, ScriptedModel

    model = ScriptedModel(
        replies=[
            Reply(function_calls=[Call("get_weather", {"city": "Paris"})]),
            Reply(text="It is sunny in Paris.", chunks=["It is ", "sunny", "."]),
        ],
    )
    agent = LlmAgent(name="assistant", model=model, tools=[get_weather])

Replies
-------
A reply is a ``Reply`` (or anything that coerces to one):

* ``Reply(text="hi")`` -- a plain text answer.
* ``Reply(function_calls=[Call("tool", {"a": 1})])`` -- ask ADK to run tools.
  Ids are left unset unless given, so ADK assigns its own ``adk-<uuid>`` ids
  exactly as it does for Gemini, and pairs the function response with them.
* ``Reply(text="abc", chunks=["a", "bc"])`` -- text that streams chunk by
  chunk under ``RunConfig(streaming_mode=StreamingMode.SSE)``.
* ``Reply(error_code="RESOURCE_EXHAUSTED", error_message="quota")`` -- an
  ``LlmResponse`` carrying an error, as a failed model call reports it.
* ``Reply()`` -- an empty turn; ADK itself turns it into a
  ``MODEL_RETURNED_NO_CONTENT`` error event, as it would for Gemini.
* ``"hi"`` -- shorthand for ``Reply(text="hi")``; a ``dict`` is passed to
  ``Reply(**d)``.
* a callable ``(llm_request) -> Reply | str | dict`` (sync or async) for
  dynamic replies, e.g. to capture the rendered system instruction in a test.

Selection (how the next reply is chosen)
----------------------------------------
The model keeps no mutable counter. The next reply is a pure function of the
``LlmRequest`` ADK sends, so one agent can serve many sessions concurrently
(a dev server) and each conversation still progresses through its own script.

ADK sends an agent its conversation with its *own* earlier turns as
``role="model"`` contents, while other agents' turns are relayed as
``role="user"`` "For context: ..." text. Counting ``model`` contents therefore
counts this agent's turns in this conversation. The "user message" below is
the last ``user`` content that carries real user text, i.e. not a tool result,
not a relayed other-agent turn and not an instruction ADK placed in contents.

1. ``rules``: the first ``Rule`` whose pattern matches the user message wins.
   Its ``replies[n]`` is used, where ``n`` is the number of model turns since
   that user message. So a rule ``[call, text]`` answers the user with the
   call, and after ADK runs the tool and sends the function response back,
   with the text.
2. ``replies``: otherwise ``replies[n]``, where ``n`` is the number of this
   agent's model turns in the whole request, so the list is consumed in order
   across the conversation. Turns answered by rules count too.
3. ``default``: when nothing matched or the sequence is exhausted. Without
   one the model echoes ``"You said: <user message>"``.

Error (and empty) replies leave nothing the model is shown again, so they do
not advance the script: the conversation meets the same error again until
something else (a new user message matching another rule) changes the request. With
``include_contents="none"`` only the current turn is visible, so ``replies``
restarts on each user message.

Streaming
---------
With ``stream=True`` each text chunk is yielded as a ``partial=True`` response
and then one ``partial=False`` response holds the aggregated text plus any
function calls, ``finish_reason=STOP`` and the usage metadata -- the shape
ADK's progressive SSE aggregator produces for Gemini. Function calls appear
only in that final response (a real model may also send them in a fragment,
which ADK never executes). Without chunks the whole text is one fragment.

Call log
--------
``model.calls`` lists the requests the model was actually sent, oldest first
(the last ``CALL_LOG_SIZE``), each a deep copy taken as it arrived, so a test
can prove which calls reached the model and which did not (an answer served
from a record never does). ``model.clear_calls()`` empties it. It observes
only; selection never reads it.

Usage metadata is estimated as ``len(text) // 4 + 1`` tokens so token counts
show up downstream. The model is not registered with ``LLMRegistry`` on
import; call ``register_scripted_model()`` if ``model="scripted"`` strings
should resolve to an (echoing) ``ScriptedModel``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator
from collections.abc import Callable
import inspect
import json
import re
from typing import Any
from typing import Optional
from typing import Union

from google.adk.models import BaseLlm
from google.adk.models import LlmCapabilities
from google.adk.models import LLMRegistry
from google.adk.models import LlmRequest
from google.adk.models import LlmResponse
from google.genai import types
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import PrivateAttr
from pydantic import model_validator

__all__ = [
    "Call",
    "Reply",
    "ReplySource",
    "Rule",
    "ScriptedModel",
    "estimate_tokens",
    "register_scripted_model",
    "system_instruction_text",
    "to_reply",
    "user_text",
]

# ADK relays another agent's turn to the current agent as user text starting
# with this preamble (google/adk/flows/llm_flows/context/_fencing.py), and may
# put the dynamic instruction in contents between these markers. Neither was
# said by the user, so neither may drive rule matching or the echo.
_RELAYED_TURN_PREFIX = "For context:"
_INSTRUCTION_MARKER = "<<<BEGIN_SYSTEM_INSTRUCTION>>>"
# ADK's preload_memory puts the memories it found in a user-role content of
# its own, right before the model call: context for the model, not a turn of
# the user. Taken for the user's message, a memory mentioning a rule's word
# would fire that rule again after every tool result, without end.
_MEMORY_MARKER = "<PAST_CONVERSATIONS>"
CALL_LOG_SIZE = 500


class Call(BaseModel):
    """One function call a reply asks ADK to run.

    Positional arguments are accepted (``Call("tool", {"x": 1})``) because
    scripts read better that way.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: Optional[str] = None
    """Leave unset so ADK assigns an ``adk-<uuid>`` id, as it does for Gemini."""

    def __init__(
        self,
        name: str,
        args: Optional[dict[str, Any]] = None,
        id: Optional[str] = None,  # noqa: A002 - mirrors FunctionCall.id
        **data: Any,
    ) -> None:
        super().__init__(name=name, args=args or {}, id=id, **data)

    def to_part(self) -> types.Part:
        """Builds the ``FunctionCall`` part ADK expects from a model."""
        part = types.Part.from_function_call(name=self.name, args=dict(self.args))
        if self.id is not None and part.function_call is not None:
            part.function_call.id = self.id
        return part


class Reply(BaseModel):
    """One scripted model turn: text, function calls, or an error."""

    model_config = ConfigDict(extra="forbid")

    text: Optional[str] = None
    function_calls: list[Call] = Field(default_factory=list)
    chunks: Optional[list[str]] = None
    """Streaming pieces of ``text``; ``text`` defaults to their join."""
    error_code: Optional[str] = None
    error_message: Optional[str] = None

    @model_validator(mode="after")
    def _check_chunks(self) -> Reply:
        # Streaming must end with exactly the text the non-streaming call
        # returns (BaseLlm's contract), so the two may not disagree.
        if self.chunks is None:
            return self
        joined = "".join(self.chunks)
        if self.text is None:
            self.text = joined
        elif self.text != joined:
            raise ValueError("Reply.chunks must join to Reply.text")
        return self

    @property
    def is_error(self) -> bool:
        return self.error_code is not None or self.error_message is not None

    def stream_chunks(self) -> list[str]:
        """The text fragments to stream; the whole text when none were given."""
        if self.chunks is not None:
            return [chunk for chunk in self.chunks if chunk]
        return [self.text] if self.text else []

    def parts(self) -> list[types.Part]:
        """Text first, then function calls, as Gemini orders a mixed turn."""
        parts: list[types.Part] = []
        if self.text:
            parts.append(types.Part.from_text(text=self.text))
        parts.extend(call.to_part() for call in self.function_calls)
        return parts


ReplySource = Union[
    Reply,
    str,
    dict[str, Any],
    Callable[[LlmRequest], Any],
]
"""Anything a script may hold: coerced to ``Reply`` by ``to_reply``."""


class Rule(BaseModel):
    """Answer user messages matching ``pattern`` with ``replies`` in order.

    A ``str`` pattern is a case-insensitive substring; pass a compiled
    ``re.Pattern`` for a regex (``re.search`` semantics, flags are yours).

    ``examples`` are messages the rule answers and ``description`` says what
    it does, for people: the home page lists them so a newcomer knows what to
    type. Each example must match the pattern, so the list cannot drift from it.
    Give ``examples`` as a dict (message -> what happens to it) when one
    description cannot serve them all (a city with weather, one without).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pattern: Union[str, re.Pattern[str]]
    replies: list[ReplySource]
    examples: Union[list[str], dict[str, str]] = Field(default_factory=list)
    description: str = ""

    @model_validator(mode="after")
    def _check_examples(self) -> Rule:
        unmatched = [example for example in self.examples if not self.matches(example)]
        if unmatched:
            raise ValueError(f"Rule examples must match its pattern; these do not: {unmatched}")
        return self

    def example_description(self, example: str) -> str:
        if isinstance(self.examples, dict):
            return self.examples[example] or self.description
        return self.description

    def matches(self, user_text: str) -> bool:
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(user_text) is not None
        return self.pattern.lower() in user_text.lower()


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for plausible usage data."""
    return len(text) // 4 + 1


def _coerce_reply(value: Any) -> Reply:
    """Turns the loose forms a script may use into a ``Reply``."""
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    if isinstance(value, dict):
        return Reply(**value)
    raise TypeError(f"Cannot turn {type(value).__name__} into a Reply")


async def to_reply(source: ReplySource, llm_request: LlmRequest) -> Reply:
    """Resolves a script entry, calling (and awaiting) it when dynamic."""
    if callable(source) and not isinstance(source, (Reply, str, dict)):
        result = source(llm_request)
        if inspect.isawaitable(result):
            result = await result
        return _coerce_reply(result)
    return _coerce_reply(source)


# --- Reading the request ----------------------------------------------------


def _text_of(content: types.Content) -> str:
    return "".join(part.text or "" for part in content.parts or [])


def _is_user_message(content: types.Content) -> bool:
    """Whether a content is something the user actually said."""
    if content.role != "user" or not content.parts:
        return False
    # Tool results travel as role="user" too, but answer the model, not the user.
    if any(part.function_response is not None for part in content.parts):
        return False
    text = _text_of(content)
    if not text.strip():
        return False
    return not (
        text.startswith(_RELAYED_TURN_PREFIX)
        or _INSTRUCTION_MARKER in text
        or _MEMORY_MARKER in text
    )


def _last_user_message_index(contents: list[types.Content]) -> Optional[int]:
    for index in range(len(contents) - 1, -1, -1):
        if _is_user_message(contents[index]):
            return index
    return None


def _count_model_turns(contents: list[types.Content]) -> int:
    return sum(1 for content in contents if content.role == "model")


def user_text(llm_request: LlmRequest) -> str:
    """The latest real user message in the request, or ``""``."""
    index = _last_user_message_index(llm_request.contents)
    return "" if index is None else _text_of(llm_request.contents[index])


def system_instruction_text(llm_request: LlmRequest) -> str:
    """The system instruction of the request as text, or ``""``."""
    instruction = llm_request.config.system_instruction if llm_request.config else None
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Content):
        return _text_of(instruction)
    return str(instruction)


def _content_size_text(content: types.Content) -> str:
    """Everything in a content that a real model would bill as input."""
    pieces: list[str] = []
    for part in content.parts or []:
        if part.text:
            pieces.append(part.text)
        if part.function_call is not None:
            pieces.append(json.dumps(part.function_call.args or {}, default=str))
        if part.function_response is not None:
            response = part.function_response.response or {}
            pieces.append(json.dumps(response, default=str))
    return "".join(pieces)


def _usage_for(
    llm_request: LlmRequest, reply: Reply
) -> types.GenerateContentResponseUsageMetadata:
    prompt_text = system_instruction_text(llm_request) + "".join(
        _content_size_text(content) for content in llm_request.contents
    )
    reply_content = types.Content(role="model", parts=reply.parts())
    reply_text = _content_size_text(reply_content)
    prompt_tokens = estimate_tokens(prompt_text)
    candidate_tokens = estimate_tokens(reply_text)
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt_tokens,
        candidates_token_count=candidate_tokens,
        total_token_count=prompt_tokens + candidate_tokens,
    )


# --- The model --------------------------------------------------------------


class ScriptedModel(BaseLlm):
    """A ``BaseLlm`` that answers from a script; see the module docstring."""

    model: str = "scripted"
    replies: list[ReplySource] = Field(default_factory=list)
    """Consumed in order per conversation (by this agent's model-turn count)."""
    rules: list[Rule] = Field(default_factory=list)
    """Checked first, in order, against the latest user message."""
    default: Optional[ReplySource] = None
    """Used when nothing else applies; ``None`` echoes the user message."""
    _calls: deque[LlmRequest] = PrivateAttr(default_factory=lambda: deque(maxlen=CALL_LOG_SIZE))

    @property
    def calls(self) -> list[LlmRequest]:
        """The requests this model was sent, oldest first (see "Call log")."""
        return list(self._calls)

    def clear_calls(self) -> None:
        self._calls.clear()

    @model_validator(mode="after")
    def _check_examples_reach_their_rule(self) -> ScriptedModel:
        # An example an earlier rule catches would tell people the wrong thing.
        for rule in self.rules:
            for example in rule.examples:
                first = next(r for r in self.rules if r.matches(example))
                if first is not rule:
                    raise ValueError(f"Example {example!r} is answered by an earlier rule ({first.pattern!r}).")
        return self

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted.*"]

    @property
    def capabilities(self) -> LlmCapabilities:
        # Declared outright so ADK skips its deprecated name-based probe, and
        # True so an agent with output_schema just expects JSON text replies
        # instead of a synthetic set_model_response tool call.
        return LlmCapabilities(output_schema_and_tools=True)

    def select(self, llm_request: LlmRequest) -> ReplySource:
        """Picks the script entry for this request (pure; no counters)."""
        contents = llm_request.contents
        anchor = _last_user_message_index(contents)
        message = "" if anchor is None else _text_of(contents[anchor])
        start = 0 if anchor is None else anchor + 1
        turns_since_message = _count_model_turns(contents[start:])
        for rule in self.rules:
            if rule.matches(message):
                if turns_since_message < len(rule.replies):
                    return rule.replies[turns_since_message]
                return self._fallback()
        turns_in_conversation = _count_model_turns(contents)
        if turns_in_conversation < len(self.replies):
            return self.replies[turns_in_conversation]
        return self._fallback()

    def _fallback(self) -> ReplySource:
        if self.default is not None:
            return self.default
        return _echo

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._calls.append(llm_request.model_copy(deep=True))
        reply = await to_reply(self.select(llm_request), llm_request)
        if reply.is_error:
            # A failed call ends the turn at once, streaming or not.
            yield self._error_response(llm_request, reply)
            return
        if stream:
            for chunk in reply.stream_chunks():
                yield self._partial_response(chunk)
        yield self._final_response(llm_request, reply)

    def _partial_response(self, chunk: str) -> LlmResponse:
        # Fragments are display hints only: ADK neither persists nor acts on them.
        return LlmResponse(
            content=types.Content(
                role="model", parts=[types.Part.from_text(text=chunk)]
            ),
            partial=True,
            model_version=self.model,
        )

    def _final_response(self, llm_request: LlmRequest, reply: Reply) -> LlmResponse:
        return LlmResponse(
            content=types.Content(role="model", parts=reply.parts()),
            partial=False,
            finish_reason=types.FinishReason.STOP,
            usage_metadata=_usage_for(llm_request, reply),
            model_version=self.model,
        )

    def _error_response(self, llm_request: LlmRequest, reply: Reply) -> LlmResponse:
        # A blocked call still reports its prompt tokens, and ADK's telemetry
        # logs a complaint about any response without usage.
        usage = _usage_for(llm_request, Reply())
        usage.candidates_token_count = 0
        usage.total_token_count = usage.prompt_token_count
        return LlmResponse(
            error_code=reply.error_code or "SCRIPTED_ERROR",
            error_message=reply.error_message,
            usage_metadata=usage,
            model_version=self.model,
        )


def _echo(llm_request: LlmRequest) -> Reply:
    """The default reply: repeat the user, so an unscripted agent still talks."""
    return Reply(text=f"You said: {user_text(llm_request)}")


def register_scripted_model() -> None:
    """Lets ``LlmAgent(model="scripted")`` resolve to an echoing ScriptedModel.

    Not done at import: the registry is process-global and tests or the dev
    server should opt in explicitly.
    """
    LLMRegistry.register(ScriptedModel)
