"""#29's last "done when": a typed client generated from /api/schema/ by openapi-python-client drives the ADK
flow (create a session, run the demo agent, read its events and state, list artifacts, run an eval set) with
only the generated functions and models, against the real server, logged in with an API token."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # slow: it spawns the generator

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "adkui_client"
APP, NOTES_APP, USER = "trip_planner", "memory_demo", "ann"


class Generated:
    """The generated package, imported from its temporary folder."""

    def __init__(self, folder: Path, output: str) -> None:
        self.folder, self.output = folder, output
        self.models: Any = importlib.import_module(f"{PACKAGE}.models")

    def client(self, url: str, token: str) -> Any:
        package: Any = importlib.import_module(PACKAGE)
        return package.AuthenticatedClient(base_url=url, token=token, prefix="Token", raise_on_unexpected_status=True,
                                           timeout=httpx.Timeout(120))

    def call(self, operation: str, **kwargs: Any) -> Any:
        """`api/<tag>/<operation_id>.py`'s sync(): the body parsed into its generated model."""
        return importlib.import_module(f"{PACKAGE}.api.{operation}").sync(**kwargs)


@pytest.fixture(scope="module")
def generated(live_server: Any, tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any) -> Iterator[Generated]:
    folder = tmp_path_factory.mktemp("client")
    with django_db_blocker.unblock():
        schema = httpx.get(f"{live_server.url}/api/schema/", timeout=60)
    assert schema.status_code == 200 and schema.headers["content-type"].startswith("application/vnd.oai.openapi")
    (folder / "schema.yaml").write_bytes(schema.content)
    command = [str(GENERATOR), "generate", "--path", str(folder / "schema.yaml"), "--output-path", str(folder / PACKAGE),
               "--meta", "none", "--config", str(ROOT / "openapi-python-client.yaml"), "--fail-on-warning"]
    # ruff, which formats the generated code, is installed beside the generator.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    sys.path.insert(0, str(folder))
    try:
        yield Generated(folder / PACKAGE, result.stdout + result.stderr)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.fixture
def token(settings: Any) -> str:
    """Production mode (logins on): an editor's API token, which the generated client sends."""
    settings.ADKUI_LOCAL_DEV = False
    user = User.objects.create_user(USER)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="access", codename__in=["view", "edit"]))
    return Token.objects.create(user=user).key


def test_the_generator_reads_the_schema_without_a_complaint(generated: Generated) -> None:
    """Every warning (a schema it cannot read, a response it drops, two models of one name) fails the run."""
    assert generated.output.split() == ["Generating", str(generated.folder)], generated.output


def test_the_generated_client_drives_the_adk_flow(generated: Generated, live_server: Any, token: str) -> None:
    m, call, client = generated.models, generated.call, generated.client(live_server.url, token)
    assert APP in call("apps.app_list", client=client)
    assert APP in [app.name for app in call("apps.app_list", client=client, detailed=True).apps]

    state = m.CreateSessionRequestStateType0.from_dict({"budget": 900})
    session = call("sessions.session_create", app_name=APP, user_id=USER, client=client,
                   body=m.CreateSessionRequest(state=state))
    assert isinstance(session, m.Session) and session.state["budget"] == 900

    ran = call("runs.run", client=client, body=_ask(m, APP, session.id, "Please plan a trip to Lisbon"))
    assert all(isinstance(event, m.Event) for event in ran)
    assert ran[0].content.parts[0].function_call.name == "plan_trip"
    assert ran[-1].content.parts[0].text == "Done! Your trip is planned."

    page = call("events.event_list", app_name=APP, user_id=USER, session_id=session.id, client=client)
    assert isinstance(page, m.EventPage) and page.next_after_seq is None
    assert [event.id for event in page.events][1:] == [event.id for event in ran]  # after the user's own event
    assert [event.seq for event in page.events] == list(range(1, page.last_seq + 1))

    now = call("events.state_get", app_name=APP, user_id=USER, session_id=session.id, client=client)
    assert isinstance(now, m.StateAsOf) and now.seq == page.last_seq
    assert (now.session["destination"], now.user["last_destination"], now.app["popular_city"]) == ("Lisbon",) * 3
    before = call("events.state_get", app_name=APP, user_id=USER, session_id=session.id, client=client, seq=0)
    assert before.state.additional_properties == {"budget": 900}
    stored = call("sessions.session_get", app_name=APP, user_id=USER, session_id=session.id, client=client)
    assert stored.state["destination"] == "Lisbon" and [e.id for e in stored.events] == [e.id for e in page.events]

    _notes_are_artifacts(generated, client)
    _the_session_becomes_a_passing_eval_case(generated, client, session.id)


def _ask(m: Any, app: str, session_id: str, text: str) -> Any:
    message = m.Content(role="user", parts=[m.Part(text=text)])
    return m.RunAgentRequest(app_name=app, user_id=USER, session_id=session_id, new_message=message)


def _notes_are_artifacts(generated: Generated, client: Any) -> None:
    """The memory demo saves a note as an artifact: listed, and loaded as a genai Part."""
    m, call = generated.models, generated.call
    session = call("sessions.session_create", app_name=NOTES_APP, user_id=USER, client=client, body=m.CreateSessionRequest())
    ran = call("runs.run", client=client, body=_ask(m, NOTES_APP, session.id, "note: pack the camera"))
    saved = [name for event in ran for name in event.actions.artifact_delta.additional_properties]
    names = call("artifacts.artifact_list", app_name=NOTES_APP, user_id=USER, session_id=session.id, client=client)
    assert names == saved and len(names) == 1
    part = call("artifacts.artifact_load", app_name=NOTES_APP, user_id=USER, session_id=session.id,
                artifact_name=names[0], client=client)
    assert isinstance(part, m.Part) and "pack the camera" in part.text


def _the_session_becomes_a_passing_eval_case(generated: Generated, client: Any, session_id: str) -> None:
    """ADK's eval routes: a set, the session added as its case, a run on ADK's engine, its stored result."""
    m, call = generated.models, generated.call
    created = call("adk_evals.adk_eval_set_create", app_name=APP, client=client,
                   body=m.CreateEvalSetBody(eval_set=m.EvalSetToCreate(eval_set_id="client_flow", eval_cases=[])))
    assert isinstance(created, m.EvalSet) and created.eval_set_id == "client_flow"
    call("adk_evals.adk_eval_add_session", app_name=APP, eval_set_id="client_flow", client=client,
         body=m.AddSessionBody(eval_id="lisbon", session_id=session_id, user_id=USER))
    metric = m.EvalMetric(metric_name="response_match_score", threshold=0.5)
    run = call("adk_evals.adk_eval_run", app_name=APP, eval_set_id="client_flow", client=client,
               body=m.RunEvalBody(eval_metrics=[metric]))
    [result] = run.run_eval_results
    assert (result.eval_id, result.final_eval_status) == ("lisbon", m.EvalStatus.PASSED)
    [score] = [score for score in result.overall_eval_metric_results if score.metric_name == metric.metric_name]
    assert score.eval_status == m.EvalStatus.PASSED and score.score >= metric.threshold
    [result_id] = call("adk_evals.adk_eval_result_list", app_name=APP, client=client).eval_result_ids
    stored = call("adk_evals.adk_eval_result_get", app_name=APP, eval_result_id=result_id, client=client)
    assert isinstance(stored, m.EvalResult) and stored.eval_set_id == "client_flow"
    assert [(case.eval_id, case.final_eval_status) for case in stored.eval_case_results] == [("lisbon", m.EvalStatus.PASSED)]
