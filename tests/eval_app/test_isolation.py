"""Isolation of eval runs (issue #11, items 4-UI and 5): a run's sessions live in a sandbox app of
their own (`agent@eval-<run>-<case>-<repeat>`), hidden from the session browser and ADK's list routes unless asked
for; a sandbox session's page still works and links back to its run; the case editor edits the
expected final state; and a case made from an event of a session proposes the states as of then."""
from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from google.adk.events import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types

from eval_app import engine, metrics, selectors
from eval_app.forms import case_initial
from eval_app.models import EvalCase, EvalRun
from eval_app.selectors import adk_eval_case
from runtime_app import runs
from sessions_app import selectors as session_selectors
from sessions_app.models import App, AppState, UserState
from sessions_app.models import Session as SessionRow
from sessions_app.sandbox import sandbox_app_name
from tests.conftest import close_worker_connections

from .conftest import AGENT

pytestmark = pytest.mark.django_db


def user_event(text: str, invocation_id: str) -> AdkEvent:
    return AdkEvent(author="user", invocation_id=invocation_id,
                    content=types.Content(role="user", parts=[types.Part(text=text)]))


def reply(text: str, invocation_id: str, delta: dict | None = None) -> AdkEvent:
    return AdkEvent(author=AGENT, invocation_id=invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                    actions=EventActions(state_delta=delta or {}))


@pytest.fixture
def run(demo_set) -> EvalRun:
    return EvalRun.objects.create(eval_set=demo_set, app_name=AGENT, eval_ids=["plan_lisbon"], total=1,
                                  status=EvalRun.COMPLETED)


@pytest.fixture
def developer(service):
    """The developer's own session, with state in every scope."""
    session = service.create_session_sync(app_name=AGENT, user_id="ada", session_id="dev-1",
                                          state={"app:plan": "basic", "user:name": "Ada", "topic": "trains"})
    service.append_event_sync(session, user_event("hi", "d-1"))
    service.append_event_sync(session, reply("hello", "d-1", {"app:visits": 1}))
    return SessionRow.objects.select_related("app").get(app__name=AGENT, session_id="dev-1")


@pytest.fixture
def sandboxed(service, run, developer):
    """A session of the run's sandbox, for the same user, writing the same app: and user: keys."""
    name = sandbox_app_name(AGENT, f"eval-{run.pk}")
    session = service.create_session_sync(app_name=name, user_id="ada", session_id="case-1",
                                          state={"app:plan": "pro", "user:name": "Eve"})
    service.append_event_sync(session, user_event("Please plan a trip to Lisbon", "e-1"))
    service.append_event_sync(session, reply("Lisbon it is", "e-1", {"app:visits": 99, "user:name": "Mallory",
                                                                    "destination": "Lisbon"}))
    return SessionRow.objects.select_related("app").get(app__name=name, session_id="case-1")


def developer_state() -> tuple[dict, dict]:
    app = AppState.objects.get(app__name=AGENT).state
    user = UserState.objects.get(app__name=AGENT, user_id="ada").state
    return app, user


# ---- a run leaves the developer's state and lists alone ---------------------------


def test_a_sandbox_session_leaves_the_developers_app_and_user_state_alone(developer, sandboxed):
    assert developer_state() == ({"plan": "basic", "visits": 1}, {"name": "Ada"})
    assert session_selectors.current_state(sandboxed).app == {"plan": "pro", "visits": 99}
    assert session_selectors.session_merged_state(developer) == {
        "topic": "trains", "app:plan": "basic", "app:visits": 1, "user:name": "Ada"}


def test_the_agent_runs_in_a_sandbox_under_the_sandbox_name(service, run, developer):
    """A chat in a sandbox session runs the sandbox's agent (make_runner by the real name) and its
    tools' app:/user: writes land in the sandbox: the developer's state does not move."""
    name = sandbox_app_name(AGENT, f"eval-{run.pk}")
    session = service.create_session_sync(app_name=name, user_id="ada", session_id="chat-1")
    row = SessionRow.objects.select_related("app").get(app__name=name, session_id="chat-1")

    async def go() -> None:
        async for _ in runs.run_agent(runs.RunRequest(
                key=row.key, new_message=types.Content(role="user", parts=[types.Part(text="Please plan a trip to Oslo")]))):
            pass

    async_to_sync(go)()
    close_worker_connections()
    stored = service.get_session_sync(app_name=name, user_id="ada", session_id=session.id)
    assert stored.state["app:popular_city"] == "Oslo" and stored.state["user:last_destination"] == "Oslo"
    assert developer_state() == ({"plan": "basic", "visits": 1}, {"name": "Ada"})


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("async_db_threads")
def test_a_run_through_the_engine_leaves_the_developers_state_and_lists_alone(client, demo_set, developer):
    """A case whose session_input writes the developer's user and the same app:/user: keys, and whose
    agent (plan_trip) writes app: and user: keys, runs in the run's sandbox: nothing the developer
    sees changes, and the run's session shows only when asked for."""
    case = demo_set.cases.get(eval_id="plan_lisbon")
    case.data["session_input"] = {"app_name": AGENT, "user_id": "ada", "state": {"app:plan": "pro", "user:name": "Eve"}}
    case.save()
    criteria = {"tool_trajectory_avg_score": 1.0}
    run = EvalRun.objects.create(eval_set=demo_set, app_name=AGENT, eval_ids=["plan_lisbon"], total=1,
                                 metrics=[m.model_dump(mode="json") for m in metrics.eval_metrics(criteria)])
    [item] = selectors.pending_items(run)
    outcome = engine.evaluate_case_sync(run, item)
    assert outcome.status != "error" and outcome.app_name == f"{AGENT}@eval-{run.pk}-0-0"

    assert developer_state() == ({"plan": "basic", "visits": 1}, {"name": "Ada"})
    sandbox = SessionRow.objects.select_related("app").get(app__name=outcome.app_name)
    assert session_selectors.current_state(sandbox).app["popular_city"] == "Lisbon"
    assert session_selectors.current_state(sandbox).user["name"] == "Eve"
    url = f"/api/apps/{AGENT}/users/ada/sessions"
    assert [s["id"] for s in client.get(url).json()] == ["dev-1"]
    assert [s["appName"] for s in client.get(url, {"include_eval": "true"}).json()] == [AGENT, outcome.app_name]
    page = client.get(reverse("runtime:app_detail", args=[AGENT])).content.decode()
    assert sandbox.session_id not in page
    assert sandbox.session_id in client.get(reverse("runtime:app_detail", args=[AGENT]), {"eval": "1"}).content.decode()


def test_the_app_page_hides_eval_sessions_unless_asked(client, developer, sandboxed, run):
    url = reverse("runtime:app_detail", args=[AGENT])
    page = client.get(url).content.decode()
    assert "dev-1" in page and "case-1" not in page
    assert 'name="eval"' in page and "show eval sessions" in page
    shown = client.get(url, {"eval": "1"}).content.decode()
    assert "dev-1" in shown and "case-1" in shown and f"eval run {run.pk}" in shown


def test_the_home_dashboard_hides_eval_apps_and_sessions_unless_asked(client, developer, sandboxed):
    home = client.get(reverse("runtime:app_list")).content.decode()
    assert "dev-1" in home and "case-1" not in home and sandboxed.app.name not in home
    assert "show eval sessions" in home
    shown = client.get(reverse("runtime:app_list"), {"eval": "1"}).content.decode()
    assert "case-1" in shown and sandboxed.app.name in shown and "hide eval sessions" in shown


def test_selectors_leave_sandboxes_out_by_default(developer, sandboxed):
    assert sandboxed.app.name not in session_selectors.apps_by_name()
    assert sandboxed.app.name in session_selectors.apps_by_name(sandboxes=True)
    assert session_selectors.session_counts() == {AGENT: 1}
    app = App.objects.get(name=AGENT)
    assert [s.session_id for s in session_selectors.session_browser(app=app)] == ["dev-1"]
    both = session_selectors.session_browser(app=app, sandboxes_of=AGENT, order="update_time")
    assert [s.session_id for s in both] == ["dev-1", "case-1"]


# ---- ADK's list route ------------------------------------------------------------


def test_adk_list_sessions_hides_eval_sessions_unless_asked(client, service, developer, sandboxed):
    url = f"/api/apps/{AGENT}/users/ada/sessions"
    assert [s["id"] for s in client.get(url).json()] == ["dev-1"]
    listed = client.get(url, {"include_eval": "true"}).json()
    assert [(s["id"], s["appName"]) for s in listed] == [("dev-1", AGENT), ("case-1", sandboxed.app.name)]
    assert client.get(f"/api/apps/{AGENT}/users/someone/sessions", {"include_eval": "true"}).json() == []
    # ADK's own eval sessions too, as ADK's server leaves them out.
    service.create_session_sync(app_name=AGENT, user_id="ada", session_id="___eval___session___1")
    assert [s["id"] for s in client.get(url).json()] == ["dev-1"]
    assert "___eval___session___1" in [s["id"] for s in client.get(url, {"include_eval": "1"}).json()]
    bad = client.get(url, {"include_eval": "perhaps"})
    assert bad.status_code == 400 and "include_eval" in bad.json()
    # The sandbox itself is an app ADK's routes know, and list-apps lists agents only.
    assert [s["id"] for s in client.get(f"/api/apps/{sandboxed.app.name}/users/ada/sessions").json()] == ["case-1"]
    assert sandboxed.app.name not in client.get("/api/list-apps").json()


# ---- a sandbox session's page ------------------------------------------------------


def test_a_sandbox_sessions_page_works_and_links_back_to_its_run(client, sandboxed, run):
    page = client.get(reverse("runtime:session_detail", args=[sandboxed.pk])).content.decode()
    assert f"eval sandbox of run {run.pk}" in page
    assert f'href="{reverse("eval_app:run_detail", args=[run.pk])}"' in page
    assert "Lisbon it is" in page and "Mallory" in page  # timeline and state
    assert 'id="chat-form"' in page and "No agent named" not in page  # the chat runs its agent
    assert 'id="agent-graph"' in page
    state = client.get(reverse("sessions_app:session_state", args=[sandboxed.pk]), {"seq": 0}).content.decode()
    assert "Eve" in state and "Mallory" not in state


def test_a_developer_sessions_page_has_no_sandbox_badge(client, developer):
    page = client.get(reverse("runtime:session_detail", args=[developer.pk])).content.decode()
    assert "sandbox-badge" not in page


# ---- the case editor's expected final state --------------------------------------------


def edit_post(case: EvalCase, **changes) -> dict:
    """The case editor's form as the page posts it, with `changes`."""
    head, turns = case_initial(adk_eval_case(case))
    data = {**head, "turn-TOTAL_FORMS": str(len(turns)), "turn-INITIAL_FORMS": str(len(turns))}
    for i, turn in enumerate(turns):
        data.update({f"turn-{i}-{k}": v for k, v in turn.items()})
    data.update(changes)
    return data


def test_the_case_editor_saves_the_expected_final_state(client, demo_set):
    case = demo_set.cases.get(eval_id="plan_lisbon")
    url = reverse("eval_app:case_edit", args=[case.pk])
    assert "expected final state" in client.get(url).content.decode().lower()
    final = {"destination": "Lisbon", "user:last_destination": "Lisbon", "app:popular_city": "Lisbon"}
    response = client.post(url, edit_post(case, final_session_state=json.dumps(final)))
    assert response.status_code == 302
    case.refresh_from_db()
    assert case.data["final_session_state"] == final and adk_eval_case(case).final_session_state == final
    assert json.loads(client.get(url).context["head"].initial["final_session_state"]) == final


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "must be a JSON object"),
    ("{nope", "Not valid JSON"),
    (json.dumps({"k" * 300: 1}), "at most 255 characters"),
    (json.dumps({"user:" + "k" * 256: 1}), "at most 255 characters"),
    (json.dumps({"temp:draft": 1}), "temp: keys are never stored"),
])
def test_the_case_editor_refuses_a_bad_final_state_and_changes_nothing(client, demo_set, text, message):
    case = demo_set.cases.get(eval_id="plan_lisbon")
    before = json.dumps(case.data, sort_keys=True)
    response = client.post(reverse("eval_app:case_edit", args=[case.pk]), edit_post(case, final_session_state=text))
    assert response.status_code == 400
    errors = response.context["head"].errors["final_session_state"]
    assert any(message in e for e in errors), errors
    case.refresh_from_db()
    assert json.dumps(case.data, sort_keys=True) == before


def test_the_case_editor_refuses_a_final_state_over_the_size_cap(client, demo_set, settings):
    settings.ADKUI_MAX_STATE_BYTES = 100
    case = demo_set.cases.get(eval_id="plan_lisbon")
    response = client.post(reverse("eval_app:case_edit", args=[case.pk]),
                           edit_post(case, final_session_state=json.dumps({"big": "x" * 200})))
    assert response.status_code == 400 and "at most 100 bytes" in str(response.context["head"].errors)


# ---- add to an eval set from an event ------------------------------------------------


@pytest.fixture
def story(service):
    """`app:plan` exists before the session; the session then changes every scope over two turns."""
    service.create_session_sync(app_name=AGENT, user_id="zed", session_id="before", state={"app:plan": "basic"})
    session = service.create_session_sync(app_name=AGENT, user_id="ann", session_id="story",
                                          state={"topic": "cats", "user:name": "Ann"})
    service.append_event_sync(session, user_event("hi", "i-1"))                                    # 1
    service.append_event_sync(session, reply("hello", "i-1", {"topic": "dogs", "app:plan": "pro",
                                                              "temp:scratch": 1}))                 # 2
    service.append_event_sync(session, user_event("again", "i-2"))                                 # 3
    service.append_event_sync(session, reply("bye", "i-2", {"topic": "birds", "user:name": "Bob"}))  # 4
    return SessionRow.objects.select_related("app").get(app__name=AGENT, session_id="story")


START = {"topic": "cats", "user:name": "Ann", "app:plan": "basic"}
AT_2 = {"topic": "dogs", "user:name": "Ann", "app:plan": "pro"}


def test_a_case_from_an_event_proposes_the_states_as_of_then(story):
    assert selectors.session_initial_state(story) == START
    assert selectors.proposed_final_state(story, 2) == AT_2
    case = selectors.eval_case_from_session(story, eval_id="c", at=2, final_session_state=AT_2)
    assert [t.user_content.parts[0].text for t in case.conversation] == ["hi"]
    assert case.conversation[0].final_response.parts[0].text == "hello"
    assert case.session_input.state == START and case.final_session_state == AT_2
    whole = selectors.eval_case_from_session(story, eval_id="c")
    assert [t.user_content.parts[0].text for t in whole.conversation] == ["hi", "again"]
    assert whole.session_input.state == START and whole.final_session_state == {}


def test_add_from_an_event_proposes_then_saves_the_edited_final_state(client, story):
    url = reverse("eval_app:add_session_form", args=[story.pk])
    response = client.get(url, {"at": 2}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    form = response.context["form"]
    assert json.loads(form.initial["final_session_state"]) == AT_2 and form.initial["eval_id"] == "session_story_at_2"
    assert 'name="final_session_state"' in response.content.decode() and 'name="at"' in response.content.decode()

    edited = {**AT_2, "topic": "wolves"}
    done = client.post(url, {"new_eval_set_id": "from_events", "eval_id": "story_2", "at": "2",
                             "final_session_state": json.dumps(edited)}, headers={"HX-Request": "true"})
    assert done.status_code == 200 and "Added case" in done.content.decode()
    case = EvalCase.objects.get(eval_id="story_2")
    adk = adk_eval_case(case)
    assert case.eval_set.app_name == AGENT and len(adk.conversation) == 1
    assert adk.session_input.state == START and adk.final_session_state == edited


def test_add_from_an_event_refuses_a_bad_final_state_and_adds_nothing(client, story):
    url = reverse("eval_app:add_session_form", args=[story.pk])
    response = client.post(url, {"new_eval_set_id": "from_events", "eval_id": "story_2", "at": "2",
                                 "final_session_state": "[]"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "must be a JSON object" in response.content.decode()
    assert not EvalCase.objects.filter(eval_id="story_2").exists()
    assert client.get(url, {"at": 99}).status_code == 404
    assert client.get(url, {"at": "x"}).status_code == 404


def test_the_timeline_offers_add_to_eval_set_on_every_event(client, story):
    page = client.get(reverse("runtime:session_detail", args=[story.pk])).content.decode()
    for seq in (1, 2, 3, 4):
        assert f'{reverse("eval_app:add_session_form", args=[story.pk])}?at={seq}' in page


def test_a_case_from_a_sandbox_session_is_the_agents(client, sandboxed):
    url = reverse("eval_app:add_session_form", args=[sandboxed.pk])
    done = client.post(url, {"new_eval_set_id": "from_eval", "eval_id": "again", "at": "2",
                             "final_session_state": "{}"}, headers={"HX-Request": "true"})
    assert "Added case" in done.content.decode()
    case = EvalCase.objects.get(eval_id="again")
    assert case.eval_set.app_name == AGENT and adk_eval_case(case).session_input.app_name == AGENT
