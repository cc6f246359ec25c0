"""Edit and continue on the demo session: the fork, the calls served from the record, the isolation."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from inspector_app.models import ModelCall, ToolCall
from runtime_app import agents, demo, edit_continue
from runtime_app.edit_continue import EditError, Edits
from runtime_app.scripted_model import Reply, ScriptedModel
from sessions_app import selectors
from sessions_app.models import Event, Session
from sessions_app.sandbox import is_sandbox

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo_session() -> Session:
    async_to_sync(demo._run_demo)()
    return demo.demo_session()


def _models() -> dict[str, object]:
    root = agents.load(demo.DEMO_APP).root
    return {"trip_planner": root.model, "weather_expert": root.find_agent("weather_expert").model}


def _weather_invocation_calls(session: Session) -> list[ModelCall]:
    """The model calls of the demo's "What is the weather in Lisbon?" turn, in order."""
    user = Event.objects.get(session=session, author="user", data__content__parts__0__text="What is the weather in Lisbon?")
    return list(ModelCall.objects.for_invocation(session, user.invocation_id))


def _clear_logs() -> None:
    for model in _models().values():
        model.clear_calls()


def _run(call: ModelCall, edits: Edits) -> Session:
    plan = edit_continue.continue_create(model_call=call, edits=edits)
    async_to_sync(edit_continue.continue_run)(plan)
    return Session.objects.get(pk=plan.fork.pk)


def _texts(session: Session) -> list[str]:
    return [p.text for _, e in selectors.event_page(session) if e.content for p in e.content.parts or [] if p.text]


def _tool_names(session: Session, after_seq: int) -> list[str]:
    return [fc.name for _, e in selectors.event_page(session, after_seq=after_seq) for fc in e.get_function_calls()]


def test_the_edited_handoff_instruction_takes_another_path_in_a_sandboxed_fork(demo_session):
    handoff = _weather_invocation_calls(demo_session)[0]
    assert handoff.agent_name == "trip_planner"
    original_events = Event.objects.filter(session=demo_session).count()
    original_user_state = selectors.state_as_of(demo_session, original_events).user
    instruction = handoff.request["system_instruction"].replace("hand weather questions to weather_expert", "answer everything yourself")
    assert instruction != handoff.request["system_instruction"]
    _clear_logs()

    fork = _run(handoff, Edits(system_instruction=instruction, state={"user:name": "Grace"}))

    assert is_sandbox(fork.app.name) and fork.forked_from == demo_session
    assert "system instruction" in fork.edit_label and "state user:name" in fork.edit_label
    assert fork.edited_call_pk == handoff.pk
    # The other path: the planner plans a trip instead of handing over.
    assert _tool_names(fork, fork.forked_at_seq) == ["plan_trip"]
    assert _texts(fork)[-1] == "Done! Your trip is planned."
    # The edited call reached the model with the edited instruction; the weather expert was never called.
    planner_log = _models()["trip_planner"].calls
    assert "answer everything yourself" in planner_log[0].config.system_instruction
    assert "Ada" in planner_log[0].config.system_instruction  # the edited text as sent, not rendered again
    assert _models()["weather_expert"].calls == []
    # The fork's user: state is its own; the original's is untouched.
    fork_state = selectors.state_as_of(fork, Event.objects.filter(session=fork).count())
    assert fork_state.user["name"] == "Grace" and fork_state.session["destination"] == "Lisbon"
    assert Event.objects.filter(session=demo_session).count() == original_events
    assert selectors.state_as_of(demo_session, original_events).user == original_user_state
    assert original_user_state["name"] == "Ada"


def test_calls_before_the_edited_one_are_answered_from_the_record(demo_session):
    calls = _weather_invocation_calls(demo_session)
    answer = calls[-1]  # weather_expert's answer, after get_weather
    assert [c.agent_name for c in calls] == ["trip_planner", "weather_expert", "weather_expert"]
    _clear_logs()

    fork = _run(answer, Edits(config={**answer.request["config"], "temperature": 0.5}, state={"destination": "Kyoto"}))

    # Only the edited call reached a model: the hand-off and the get_weather request came from the record.
    assert _models()["trip_planner"].calls == []
    [sent] = _models()["weather_expert"].calls
    assert sent.config.temperature == 0.5
    assert "going to Kyoto" in sent.config.system_instruction  # the state edit fed the template, rendered live
    # get_weather answered from the record: the fork's function response is the stored result.
    stored = ToolCall.objects.get(session=demo_session, invocation_id=answer.invocation_id, tool_name="get_weather")
    responses = [fr.response for _, e in selectors.event_page(fork, after_seq=fork.forked_at_seq)
                 for fr in e.get_function_responses() if fr.name == "get_weather"]
    assert responses == [stored.result]
    assert _texts(fork)[-1] == "The weather in Lisbon is windy, 18°C."
    assert "generation config" in fork.edit_label


def test_an_edit_adk_refuses_names_the_field_and_creates_nothing(demo_session):
    handoff = _weather_invocation_calls(demo_session)[0]
    sessions = Session.objects.count()
    with pytest.raises(EditError) as bad_config:
        edit_continue.continue_create(model_call=handoff, edits=Edits(config={"temperature": "hot"}))
    assert bad_config.value.field == "config.temperature"
    with pytest.raises(EditError) as bad_contents:
        edit_continue.continue_create(model_call=handoff, edits=Edits(contents=[{"role": "user", "parts": [{"txet": "x"}]}]))
    assert bad_contents.value.field.startswith("contents.0.parts.0")
    with pytest.raises(EditError) as temp_state:
        edit_continue.continue_create(model_call=handoff, edits=Edits(state={"temp:x": 1}))
    assert temp_state.value.field == "state.temp:x"
    assert Session.objects.count() == sessions


def test_a_model_error_in_the_continued_run_is_its_error_event(demo_session, monkeypatch):
    handoff = _weather_invocation_calls(demo_session)[0]
    # Continuing reloads the agent's code, so the failing fallback is patched on the class.
    monkeypatch.setattr(ScriptedModel, "_fallback", lambda self: Reply(error_code="RESOURCE_EXHAUSTED", error_message="quota"))
    # Edited contents no rule answers: the planner's model falls back (and fails).
    fork = _run(handoff, Edits(contents=[{"role": "user", "parts": [{"text": "Tell me a joke"}]}]))

    [error] = [e for _, e in selectors.event_page(fork, after_seq=fork.forked_at_seq) if e.error_code]
    assert (error.error_code, error.error_message, error.author) == ("RESOURCE_EXHAUSTED", "quota", "trip_planner")
    assert "contents" in fork.edit_label


def test_a_call_whose_agent_is_gone_cannot_continue_and_nothing_is_created(demo_session, settings, tmp_path):
    handoff = _weather_invocation_calls(demo_session)[0]
    settings.ADKUI_AGENTS_DIR = str(tmp_path)  # an agents folder without the trip planner
    sessions = Session.objects.count()
    with pytest.raises(EditError) as gone:
        edit_continue.continue_create(model_call=handoff, edits=Edits())
    assert gone.value.field == "model_call" and "trip_planner" in gone.value.message
    assert Session.objects.count() == sessions


def test_a_record_todays_code_no_longer_follows_stops_with_an_error_event(demo_session):
    calls = _weather_invocation_calls(demo_session)
    # As if the record came from older code, whose weather agent had another name.
    ModelCall.objects.filter(pk=calls[1].pk).update(agent_name="old_weather_agent")
    _clear_logs()

    fork = _run(calls[2], Edits(config={"temperature": 0.1}))

    [error] = [e for _, e in selectors.event_page(fork, after_seq=fork.forked_at_seq) if e.error_code]
    assert "old_weather_agent" in error.error_message and "record no longer applies" in error.error_message
    assert _models()["weather_expert"].calls == []  # nothing was served wrongly, nor sent
