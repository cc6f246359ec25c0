"""The offline scripted judge, model checks and judge-call recording, run through ADK's own evaluators."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.evaluation.base_eval_service import EvaluateConfig
from google.adk.evaluation.base_eval_service import EvaluateRequest
from google.adk.evaluation.base_eval_service import InferenceConfig
from google.adk.evaluation.base_eval_service import InferenceRequest
from google.adk.evaluation.eval_case import ConversationScenario
from google.adk.evaluation.eval_case import EvalCase
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_case import InvocationEvent
from google.adk.evaluation.eval_case import InvocationEvents
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.adk.evaluation.simulation.llm_backed_user_simulator_prompts import get_llm_backed_user_simulator_prompt
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts import (
    get_per_turn_user_simulator_quality_prompt,
)
from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry
from google.adk.models import BaseLlm
from google.adk.models import LLMRegistry
from google.adk.models import LlmRequest
from google.adk.models import LlmResponse
from google.adk.sessions import InMemorySessionService
from google.genai import types
import pytest

from eval_app import judges
from runtime_app.scripted_model import Call
from runtime_app.scripted_model import Reply
from runtime_app.scripted_model import Rule
from runtime_app.scripted_model import ScriptedModel

APP = "judge_app"
SET = "judge_set"
STOP = "</finished>"


@pytest.fixture(autouse=True)
def _registered():
    judges.register()


# --- Building invocations and metrics ---------------------------------------


def _content(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def _invocation(user: str, final: str, *, tool_calls: list[tuple[str, dict, dict]] = (), author="helper") -> Invocation:
    events = []
    for name, args, result in tool_calls:
        events.append(InvocationEvent(author=author, content=types.Content(
            role="model", parts=[types.Part.from_function_call(name=name, args=args)])))
        events.append(InvocationEvent(author=author, content=types.Content(
            role="user", parts=[types.Part.from_function_response(name=name, response=result)])))
    return Invocation(
        user_content=_content("user", user),
        final_response=_content("model", final),
        intermediate_data=InvocationEvents(invocation_events=events),
    )


def _rubric(rubric_id: str, text: str) -> dict:
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}


def _metric(name: str, *, threshold: float = 0.5, num_samples: int = 1, judge=judges.SCRIPTED_JUDGE, **extra) -> EvalMetric:
    criterion = {"threshold": threshold, "judge_model_options": {"judge_model": judge, "num_samples": num_samples}}
    return EvalMetric(metric_name=name, threshold=threshold, criterion={**criterion, **extra})


async def _evaluate(metric: EvalMetric, actual, expected=None, scenario=None, *, sink=None):
    registry = DEFAULT_METRIC_EVALUATOR_REGISTRY if sink is None else judges.recording_registry(
        DEFAULT_METRIC_EVALUATOR_REGISTRY, sink)
    evaluator = registry.get_evaluator(metric)
    return await evaluator.evaluate_invocations(actual, expected, scenario)


# --- The model in ADK's registry -----------------------------------------------


def test_scripted_judge_is_in_adks_llm_registry_under_exactly_its_name():
    judges.register()  # idempotent
    assert LLMRegistry.resolve(judges.SCRIPTED_JUDGE) is judges.ScriptedJudge
    assert isinstance(LLMRegistry.new_llm(judges.SCRIPTED_JUDGE), judges.ScriptedJudge)
    with pytest.raises(ValueError):
        LLMRegistry.resolve(judges.SCRIPTED_JUDGE + "-2")


async def test_unknown_prompt_gets_an_error_never_a_verdict():
    judge = judges.ScriptedJudge()
    request = LlmRequest(contents=[_content("user", "Write me a poem.")])
    [response] = [r async for r in judge.generate_content_async(request)]
    assert response.error_code == "SCRIPTED_JUDGE_UNKNOWN_PROMPT"
    assert response.content is None


# --- Each judge metric through ADK's own evaluator -------------------------------


async def test_final_response_match_v2_valid_and_invalid():
    actual = [
        _invocation("Weather in Paris?", "Good news: it is sunny in Paris today, 25 degrees."),
        _invocation("Capital of Italy?", "I think it is Milan."),
    ]
    expected = [
        _invocation("Weather in Paris?", "Sunny in Paris, 25 degrees."),
        _invocation("Capital of Italy?", "The capital of Italy is Rome."),
    ]
    sink: list[dict] = []
    result = await _evaluate(_metric("final_response_match_v2"), actual, expected, sink=sink)

    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert result.overall_score == 0.5
    assert [(s["invocation_index"], s["verdicts"][0]["verdict"]) for s in sink] == [(0, "valid"), (1, "invalid")]
    assert "'rome'" in sink[1]["verdicts"][0]["rationale"]  # says why


async def test_final_response_match_v2_numbers_must_all_be_there():
    actual = [_invocation("Budget?", "The trip costs 1,200 euros.")]
    passing = await _evaluate(_metric("final_response_match_v2"), actual, [_invocation("Budget?", "1200 euros")])
    failing = await _evaluate(_metric("final_response_match_v2"), actual, [_invocation("Budget?", "1500 euros")])
    assert (passing.overall_eval_status, failing.overall_eval_status) == (EvalStatus.PASSED, EvalStatus.FAILED)


RUBRICS = [
    _rubric("city", "The response mentions 'Paris'"),
    _rubric("no-rain", "The response does not mention 'rain'"),
    _rubric("temp", "The response gives the temperature in degrees"),
]


async def test_rubric_final_response_quality_rubric_by_rubric():
    actual = [
        _invocation("Weather in Paris?", "It is sunny in Paris, 25 degrees."),
        _invocation("Weather in London?", "Expect rain in London."),
    ]
    sink: list[dict] = []
    result = await _evaluate(_metric("rubric_based_final_response_quality_v1", rubrics=RUBRICS), actual, sink=sink)

    first, second = result.per_invocation_results
    assert {s.rubric_id: s.score for s in first.rubric_scores} == {"city": 1.0, "no-rain": 1.0, "temp": 1.0}
    assert {s.rubric_id: s.score for s in second.rubric_scores} == {"city": 0.0, "no-rain": 0.0, "temp": 0.0}
    assert result.overall_score == 0.5
    recorded = {s["invocation_index"]: {v["rubric_id"]: v["verdict"] for v in s["verdicts"]} for s in sink}
    assert recorded == {0: {"city": "yes", "no-rain": "yes", "temp": "yes"},
                        1: {"city": "no", "no-rain": "no", "temp": "no"}}
    assert all(v["rationale"] for s in sink for v in s["verdicts"])


@pytest.mark.parametrize(("rubric", "text", "satisfied"), [
    ("The agent's reply mentions 'Paris'", "We fly to Paris.", True),  # an apostrophe opens no quote
    ("The reply mentions 'no smoking'", "A no smoking room.", True),  # "no" inside quotes is no negation
    ('The reply never mentions "rain"', "Rain all day.", False),
    ("The agent asks for the travel dates", "Which dates do you want to travel?", True),
    ("The agent asks for the travel dates", "Paris is lovely.", False),
])
def test_rubric_rule(rubric, text, satisfied):
    verdict, rationale = judges.rubric_verdict(rubric, text)
    assert verdict is satisfied and rationale


async def test_rubric_tool_use_quality_judges_the_tool_calls():
    rubrics = [_rubric("t1", "The agent calls 'get_weather' with 'Paris'")]
    good = [_invocation("Weather?", "Sunny.", tool_calls=[("get_weather", {"city": "Paris"}, {"sky": "sun"})])]
    bad = [_invocation("Weather?", "Sunny.", tool_calls=[("get_time", {"city": "Paris"}, {"time": "noon"})])]
    metric = _metric("rubric_based_tool_use_quality_v1", rubrics=rubrics)
    assert (await _evaluate(metric, good)).overall_score == 1.0
    assert (await _evaluate(metric, bad)).overall_score == 0.0


async def test_rubric_multi_turn_trajectory_judges_the_whole_conversation():
    rubrics = [_rubric("both", "The agent answers about 'Paris' and about 'Rome'")]
    conversation = [_invocation("Paris?", "Paris is sunny."), _invocation("Rome?", "Rome is cloudy.")]
    one_city = [_invocation("Paris?", "Paris is sunny."), _invocation("Rome?", "No idea.")]
    metric = _metric("rubric_based_multi_turn_trajectory_quality_v1", rubrics=rubrics)
    sink: list[dict] = []
    passing = await _evaluate(metric, conversation, sink=sink)
    failing = await _evaluate(metric, one_city)
    assert (passing.overall_score, failing.overall_score) == (1.0, 0.0)
    assert [s["invocation_index"] for s in sink] == [1]  # ADK judges the conversation on its last turn


async def test_hallucinations_v1_checks_sentences_against_the_context():
    grounded = _invocation("Weather in Paris?", "It is sunny in Paris. The temperature is 25 degrees. Enjoy your trip!",
                           tool_calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny", "temperature": "25 degrees"})])
    invented = _invocation("Weather in Paris?", "It is sunny in Paris. The temperature is 40 degrees.",
                           tool_calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny", "temperature": "25 degrees"})])
    sink: list[dict] = []
    metric = _metric("hallucinations_v1", threshold=0.9)
    passing = await _evaluate(metric, [grounded], sink=sink)
    failing = await _evaluate(metric, [invented])
    assert passing.overall_score == 1.0 and passing.overall_eval_status == EvalStatus.PASSED
    assert failing.overall_score == 0.5 and failing.overall_eval_status == EvalStatus.FAILED
    assert [s["stage"] for s in sink] == ["segmenter", "validator"]
    labels = {v["property"]: v["verdict"] for v in sink[1]["verdicts"]}
    assert labels == {"It is sunny in Paris.": "supported", "The temperature is 25 degrees.": "supported",
                      "Enjoy your trip!": "not_applicable"}


SCENARIO = ConversationScenario(
    starting_prompt="Hi, I want to plan a trip.",
    conversation_plan="Ask for a hotel in Lisbon.\nAsk for a table at a fish restaurant.",
)


async def test_per_turn_user_simulator_quality_follows_the_plan_and_the_stop():
    agent_turns = ["Where to?", "Hotel Lisboa is booked.", "Table booked at Mar."]
    faithful = [
        _invocation(user, reply)
        for user, reply in zip([SCENARIO.starting_prompt, *judges.plan_steps(SCENARIO.conversation_plan)], agent_turns)
    ]
    skipping = [_invocation(SCENARIO.starting_prompt, "Where to?"), _invocation("Book me a car in Porto.", "Done.")]
    metric = _metric("per_turn_user_simulator_quality_v1", threshold=1.0)
    sink: list[dict] = []
    passing = await _evaluate(metric, faithful, scenario=SCENARIO, sink=sink)
    failing = await _evaluate(metric, skipping, scenario=SCENARIO)
    assert passing.overall_score == 1.0
    assert failing.overall_eval_status == EvalStatus.FAILED
    assert [(s["invocation_index"], s["stage"], s["verdicts"][0]["verdict"]) for s in sink] == [
        (1, "turn", "valid"), (2, "turn", "valid"), (3, "stop_signal", "valid")]


def test_simulator_and_its_judge_read_adks_persona_prompts_too():
    persona = get_default_persona_registry().get_persona("NOVICE")
    history = "user: Hi, I want to plan a trip.\n\nplanner: Sure.\n# Options\nWhere to?"
    plan = SCENARIO.conversation_plan
    prompt = get_llm_backed_user_simulator_prompt(
        conversation_plan=plan, conversation_history=history, stop_signal=STOP, user_persona=persona)
    assert judges.answer(prompt) == "Ask for a hotel in Lisbon."
    assert judges.answer(prompt) == judges.answer(prompt)
    done = history + "\n\nuser: Ask for a hotel in Lisbon.\n\nplanner: ok\n\nuser: Ask for a table at a fish restaurant."
    assert judges.answer(get_llm_backed_user_simulator_prompt(
        conversation_plan=plan, conversation_history=done, stop_signal=STOP, user_persona=persona)) == STOP
    quality = get_per_turn_user_simulator_quality_prompt(
        conversation_plan=plan, conversation_history=history, generated_user_response=STOP, stop_signal=STOP,
        user_persona=persona)
    assert '"is_valid": false' in judges.answer(quality)  # stopping before the plan is done


# --- Recording -------------------------------------------------------------------


async def test_recording_attributes_every_sample_to_its_invocation():
    actual = [_invocation("Paris?", "Sunny in Paris, 25 degrees."), _invocation("London?", "Rain in London.")]
    sink: list[dict] = []
    metric = _metric("rubric_based_final_response_quality_v1", rubrics=RUBRICS, num_samples=3)
    result = await _evaluate(metric, actual, sink=sink)

    assert sorted((s["invocation_index"], s["sample"]) for s in sink) == [(i, n) for i in (0, 1) for n in range(3)]
    assert len({s["raw"] for s in sink if s["invocation_index"] == 0}) == 1  # same prompt, same answer
    for entry in sink:
        adk_scores = result.per_invocation_results[entry["invocation_index"]].rubric_scores
        assert {v["rubric_id"]: v["verdict"] for v in entry["verdicts"]} == {
            s.rubric_id: {1.0: "yes", 0.0: "no"}[s.score] for s in adk_scores}
        assert entry["metric_name"] == "rubric_based_final_response_quality_v1" and entry["dropped"] == []


class _StrayJudge(BaseLlm):
    """A judge that answers one rubric and invents another, as real models sometimes do."""

    model: str = "adkui-test-stray-judge"

    @classmethod
    def supported_models(cls) -> list[str]:
        return ["adkui-test-stray-judge"]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        text = ("Property: The response mentions 'Paris'\nRationale: It does.\nVerdict: yes\n\n"
                "Property: The response is written in French\nRationale: It is not.\nVerdict: no")
        yield LlmResponse(content=_content("model", text))


async def test_a_verdict_adk_dropped_is_recorded_as_dropped():
    LLMRegistry.register(_StrayJudge)
    sink: list[dict] = []
    metric = _metric("rubric_based_final_response_quality_v1", judge="adkui-test-stray-judge",
                     rubrics=[_rubric("city", "The response mentions 'Paris'")])
    result = await _evaluate(metric, [_invocation("Paris?", "Paris.")], sink=sink)

    assert [s.rubric_id for s in result.per_invocation_results[0].rubric_scores] == ["city"]
    [entry] = sink
    assert [v["rubric_id"] for v in entry["verdicts"]] == ["city"]
    assert entry["dropped"] == [{"property": "The response is written in French", "verdict": "no",
                                 "rationale": "It is not."}]


async def test_identical_invocations_get_their_own_samples():
    twins = [_invocation("Paris?", "Sunny in Paris."), _invocation("Paris?", "Sunny in Paris.")]
    sink: list[dict] = []
    await _evaluate(_metric("final_response_match_v2", num_samples=2), twins, twins, sink=sink)
    assert [(s["invocation_index"], s["sample"]) for s in sink] == [(0, 0), (0, 1), (1, 0), (1, 1)]


class _BrokenJudge(BaseLlm):
    model: str = "adkui-test-broken-judge"

    @classmethod
    def supported_models(cls) -> list[str]:
        return ["adkui-test-broken-judge"]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        raise ConnectionError("judge unreachable")
        yield  # an async generator, like every model


async def test_a_failed_judge_call_is_recorded_with_its_error():
    LLMRegistry.register(_BrokenJudge)
    sink: list[dict] = []
    metric = _metric("final_response_match_v2", judge="adkui-test-broken-judge")
    result = await _evaluate(metric, [_invocation("a", "b")], [_invocation("a", "b")], sink=sink)
    assert result.overall_eval_status == EvalStatus.NOT_EVALUATED
    assert [(s["invocation_index"], s["error"]) for s in sink] == [(0, "ConnectionError: judge unreachable")]


async def test_recording_keeps_the_base_registry_untouched():
    sink: list[dict] = []
    judges.recording_registry(DEFAULT_METRIC_EVALUATOR_REGISTRY, sink)
    await _evaluate(_metric("final_response_match_v2"), [_invocation("a", "b")], [_invocation("a", "b")])
    assert sink == []


# --- Choosing and checking models ---------------------------------------------------


@pytest.fixture
def no_gemini(monkeypatch):
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)


def test_check_model_rejects_what_adk_cannot_load(no_gemini, monkeypatch):
    with pytest.raises(ValueError, match="cannot load the model 'no-such-model'"):
        judges.check_model("no-such-model")
    with pytest.raises(ValueError, match="No model name"):
        judges.check_model("  ")
    with pytest.raises(ValueError, match="GOOGLE_API_KEY"):
        judges.check_model("gemini-2.5-flash")
    judges.check_model(judges.SCRIPTED_JUDGE)
    judges.check_model("openai/gpt-4o")  # LiteLLM, installed; nothing is called
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    judges.check_model("gemini-2.5-flash")


def test_default_judge_model_is_gemini_only_with_a_key(no_gemini, monkeypatch):
    assert judges.default_judge_model() == judges.SCRIPTED_JUDGE
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    assert judges.default_judge_model() == "gemini-2.5-flash"


def test_vertex_only_metrics_say_they_cannot_run_offline(no_gemini):
    with pytest.raises(ValueError, match="cannot run offline"):
        judges.check_metric_available("safety_v1")
    judges.check_metric_available("final_response_match_v2")


def test_user_simulator_provider_uses_the_run_judge_unless_the_config_names_a_model(no_gemini):
    def model_of(provider):
        return provider._user_simulator_config.model

    assert model_of(judges.user_simulator_provider(None, "")) == judges.SCRIPTED_JUDGE
    assert model_of(judges.user_simulator_provider({"max_allowed_invocations": 4}, "adkui-scripted-judge")) == (
        judges.SCRIPTED_JUDGE)
    assert model_of(judges.user_simulator_provider({"model": "gemini-2.5-pro"}, judges.SCRIPTED_JUDGE)) == "gemini-2.5-pro"
    with pytest.raises(ValueError):
        judges.user_simulator_provider({"type": "no-such-simulator"}, "")


# --- End to end through LocalEvalService ----------------------------------------------


def _agent() -> LlmAgent:
    # A markdown header in a reply must not cut the history the simulator and judges read.
    model = ScriptedModel(rules=[
        Rule(pattern="trip", replies=["Where would you like to go?"]),
        Rule(pattern="hotel", replies=[Reply(function_calls=[Call("book_hotel", {"city": "Lisbon"})]),
                                       "Done.\n# Booking\nHotel Lisboa is booked in Lisbon."]),
        Rule(pattern="restaurant", replies=["Your table at Mar, a fish restaurant, is booked."]),
    ])

    def book_hotel(city: str) -> dict:
        """Books a hotel."""
        return {"hotel": "Hotel Lisboa", "city": city}

    return LlmAgent(name="planner", model=model, instruction="Plan trips.", tools=[book_hotel])


def _service(cases: list[EvalCase], *, registry=None, provider=None) -> LocalEvalService:
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(APP, SET)
    for case in cases:
        manager.add_eval_case(APP, SET, case)
    return LocalEvalService(
        root_agent=_agent(), eval_sets_manager=manager, session_service=InMemorySessionService(),
        metric_evaluator_registry=registry, user_simulator_provider=provider)


async def _run(service: LocalEvalService, metrics: list[EvalMetric]):
    inference = [r async for r in service.perform_inference(
        InferenceRequest(app_name=APP, eval_set_id=SET, inference_config=InferenceConfig()))]
    results = [r async for r in service.evaluate(
        EvaluateRequest(inference_results=inference, evaluate_config=EvaluateConfig(eval_metrics=metrics)))]
    return inference, results


async def test_conversation_scenario_runs_with_the_scripted_user_simulator(no_gemini):
    sink: list[dict] = []
    service = _service(
        [EvalCase(eval_id="scenario", conversation_scenario=SCENARIO)],
        registry=judges.recording_registry(DEFAULT_METRIC_EVALUATOR_REGISTRY, sink),
        provider=judges.user_simulator_provider(None, judges.SCRIPTED_JUDGE),
    )
    metric = _metric("per_turn_user_simulator_quality_v1", threshold=1.0)
    [inference], [result] = await _run(service, [metric])

    user_turns = [inv.user_content.parts[0].text for inv in inference.inferences]
    assert user_turns == ["Hi, I want to plan a trip.", "Ask for a hotel in Lisbon.", "Ask for a table at a fish restaurant."]
    assert result.final_eval_status == EvalStatus.PASSED
    assert [s["stage"] for s in sink] == ["turn", "turn", "stop_signal"]


async def test_adk_eval_config_naming_the_scripted_judge_works_after_register():
    config = EvalConfig(criteria={
        "final_response_match_v2": {"threshold": 1.0, "judge_model_options": {
            "judge_model": judges.SCRIPTED_JUDGE, "num_samples": 1}},
        "rubric_based_final_response_quality_v1": {"threshold": 1.0, "judge_model_options": {
            "judge_model": judges.SCRIPTED_JUDGE, "num_samples": 1},
            "rubrics": [_rubric("hotel", "The response mentions 'Hotel Lisboa'")]},
    })
    case = EvalCase(eval_id="hotel", conversation=[
        Invocation(user_content=_content("user", "Find me a hotel, please."),
                   final_response=_content("model", "Hotel Lisboa is booked in Lisbon.")),
    ])
    _, [result] = await _run(_service([case]), get_eval_metrics_from_config(config))

    statuses = {m.metric_name: m.eval_status for m in result.overall_eval_metric_results}
    assert statuses["final_response_match_v2"] == EvalStatus.PASSED
    assert statuses["rubric_based_final_response_quality_v1"] == EvalStatus.PASSED
    assert result.final_eval_status == EvalStatus.PASSED
