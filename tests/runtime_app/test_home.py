"""The home dashboard: apps and their agents' status, sessions to look at, eval runs, the demo."""
from __future__ import annotations

import re
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from google.genai import types
from pydantic import ValidationError

from eval_app.models import EvalRun, EvalSet
from runtime_app import agents, demo, runs
from runtime_app.demo_agents.trip_planner import agent as trip_planner
from runtime_app.scripted_model import Rule, ScriptedModel
from sessions_app.keys import SessionKey
from sessions_app.models import App, Session

APP = "trip_planner"


def section(html: str, section_id: str) -> str:
    """The HTML of one <section id=...> (or the apps table) of the page."""
    match = re.search(rf'id="{section_id}".*?</(section|table)>', html, re.S)
    assert match, f"no #{section_id} on the page"
    return match.group(0)


def home(client: Client) -> str:
    response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def agents_dir(settings, tmp_path):
    """An agents folder of the test's own: a good scripted agent and a broken one."""
    good = tmp_path / "home_good_agent"
    good.mkdir()
    (good / "__init__.py").write_text("from . import agent\n")
    (good / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\n"
        "from runtime_app.scripted_model import Rule, ScriptedModel\n"
        "root_agent = LlmAgent(name='home_good_agent', model=ScriptedModel(rules=[\n"
        "    Rule(pattern='ping', replies=['pong'], examples=['ping me'], description='answers pong')]))\n"
    )
    broken = tmp_path / "home_broken_agent"
    broken.mkdir()
    (broken / "__init__.py").write_text("from . import agent\n")
    (broken / "agent.py").write_text(
        "raise RuntimeError('no <b>GOOGLE_API_KEY</b> set\\nsecond line of the message')\n"
    )
    settings.ADKUI_AGENTS_DIR = str(tmp_path)
    agents._loader.cache_clear()
    yield tmp_path
    agents._loader.cache_clear()


@pytest.mark.django_db
def test_a_broken_agent_gets_a_red_failed_to_load_badge_with_the_first_line_of_its_error(client, agents_dir):
    apps = section(home(client), "app-list")
    broken = re.search(r'<tr data-app="home_broken_agent">.*?</tr>', apps, re.S).group(0)
    good = re.search(r'<tr data-app="home_good_agent">.*?</tr>', apps, re.S).group(0)
    assert 'class="badge error">failed to load<' in broken and "loaded<" not in broken.replace("failed to load<", "")
    assert "RuntimeError: " in broken and "no &lt;b&gt;GOOGLE_API_KEY&lt;/b&gt; set" in broken  # escaped
    assert "second line" not in broken
    assert 'class="badge scope-user">loaded<' in good


@pytest.mark.django_db
def test_the_phrases_a_scripted_agent_answers_come_from_its_rules(client, agents_dir):
    started = section(home(client), "get-started")
    assert "<code class=\"phrase\">ping me</code>" in started and "answers pong" in started
    assert 'data-agent="home_broken_agent"' not in started


@pytest.mark.django_db
def test_the_demo_agents_phrases_are_their_rules_examples_and_the_page_lists_every_one(client):
    started = section(home(client), "get-started")
    rules = [*trip_planner.root_agent.model.rules, *trip_planner.weather_expert.model.rules]
    examples = {text for rule in rules for text in rule.examples}
    assert "Please plan a trip to Lisbon" in examples
    for text in examples:
        assert f'<code class="phrase">{text}</code>' in started
    # Each phrase is what its rule answers: the agent's model picks that rule for it.
    for rule in trip_planner.root_agent.model.rules:
        for text in rule.examples:
            assert next(r for r in trip_planner.root_agent.model.rules if r.matches(text)) is rule


@pytest.mark.django_db
def test_each_example_of_a_rule_has_its_own_description(client):
    started = section(home(client), "get-started")
    lisbon = re.search(r'What is the weather in Lisbon\?</code>\s*<span[^>]*>([^<]*)<', started).group(1)
    atlantis = re.search(r'And the weather in Atlantis\?</code>\s*<span[^>]*>([^<]*)<', started).group(1)
    assert "Atlantis" not in lisbon and "Atlantis" in atlantis
    rule = Rule(pattern="w", replies=["x"], examples={"wa": "", "wb": "its own"}, description="shared")
    assert [rule.example_description(e) for e in rule.examples] == ["shared", "its own"]


def test_a_rule_refuses_an_example_it_would_not_answer():
    with pytest.raises(ValidationError, match="must match its pattern"):
        Rule(pattern="weather", replies=["sunny"], examples=["plan a trip"])
    with pytest.raises(ValidationError, match="answered by an earlier rule"):
        ScriptedModel(rules=[Rule(pattern="trip", replies=["planned"]),
                             Rule(pattern="plan", replies=["which plan?"], examples=["plan a trip"])])


@pytest.mark.django_db
def test_the_home_page_links_the_demo_session_once_it_exists(client, service):
    assert 'id="demo-missing"' in home(client) and 'id="demo-link"' not in home(client)
    service.create_session_sync(app_name=demo.DEMO_APP, user_id=demo.DEMO_USER, session_id=demo.DEMO_SESSION)
    pk = Session.objects.get(session_id=demo.DEMO_SESSION).pk
    assert f'<a id="demo-link" href="/sessions/{pk}/">' in home(client)


@pytest.mark.django_db
def test_recent_sessions_across_apps_newest_first(client, service):
    for app, session_id in (("trip_planner", "older"), ("other_app", "middle"), ("memory_demo", "newest")):
        service.create_session_sync(app_name=app, user_id="ann", session_id=session_id)
    recent = section(home(client), "recent-sessions")
    order = [recent.index(f">{sid}<") for sid in ("newest", "middle", "older")]
    assert order == sorted(order)
    pk = Session.objects.get(session_id="middle").pk
    assert f'href="/sessions/{pk}/"' in recent and "other_app" in recent


@pytest.mark.django_db
def test_sessions_needing_attention_are_listed_with_their_signals(client, service):
    for session_id in ("healthy", "erring", "looping", "repeating"):
        service.create_session_sync(app_name=APP, user_id="ann", session_id=session_id)
    Session.objects.filter(session_id="erring").update(error_count=2)
    Session.objects.filter(session_id="looping").update(tool_loop_count=1)
    Session.objects.filter(session_id="repeating").update(repeated_request_count=3)
    attention = section(home(client), "attention")
    assert ">healthy<" not in attention
    assert ">erring<" in attention and "2 errors" in attention
    assert ">looping<" in attention and "1 repeated tool call<" in attention
    assert ">repeating<" in attention and "3 repeated model requests" in attention
    assert 'class="badge error">3<' in attention  # the total


@pytest.mark.django_db
def test_eval_runs_in_progress_and_the_latest_run_per_set_with_its_pass_rate(client):
    trips = EvalSet.objects.create(app_name=APP, eval_set_id="trips", name="Trips")
    weather = EvalSet.objects.create(app_name=APP, eval_set_id="weather")
    EvalSet.objects.create(app_name=APP, eval_set_id="never_run")
    EvalRun.objects.create(eval_set=trips, app_name=APP, status="completed", total=4, done=4, passed=1, failed=3)
    latest = EvalRun.objects.create(eval_set=trips, app_name=APP, status="completed", total=4, done=4, passed=3, failed=1)
    running = EvalRun.objects.create(eval_set=trips, app_name=APP, status="running", total=4, done=1, passed=0)
    EvalRun.objects.create(eval_set=weather, app_name=APP, status="stopped", total=2, done=2, passed=2)
    html = home(client)

    in_progress = section(html, "running")
    assert f'href="/evals/runs/{running.pk}/"' in in_progress and "running" in in_progress and "1/4 cases" in in_progress
    evals = section(html, "eval-latest")
    trips_row = re.search(r'<tr data-eval-set="trips">.*?</tr>', evals, re.S).group(0)
    # The newest run that is over: the running one's rate is still moving.
    assert f'href="/evals/runs/{latest.pk}/"' in trips_row and "75%" in trips_row and "(3/4)" in trips_row
    weather_row = re.search(r'<tr data-eval-set="weather">.*?</tr>', evals, re.S).group(0)
    assert "100%" in weather_row and "stopped" in weather_row
    assert "never_run" not in evals


@pytest.mark.django_db(transaction=True)
async def test_a_running_chat_is_listed_while_it_runs(service, client):
    # The page is read from asgiref's worker thread, whose connections the `service` fixture closes.
    page = sync_to_async(lambda: home(client))
    session = await service.create_session(app_name=APP, user_id="ann", session_id="busy")
    key = SessionKey(APP, "ann", session.id)
    message = types.Content(role="user", parts=[types.Part(text="Please plan a trip to Oslo")])
    run = aiter(runs.run_agent(runs.RunRequest(key=key, new_message=message)))
    try:
        await anext(run)  # the run is under way: its tool call is out, its answer not yet
        pk = (await Session.objects.aget(session_id="busy")).pk
        assert f'href="/sessions/{pk}/">busy<' in section(await page(), "running")
    finally:
        await run.aclose()
    assert "busy" not in section(await page(), "running")


@pytest.mark.django_db
def test_the_dashboard_costs_a_fixed_number_of_queries_with_thousands_of_sessions(
    client, django_assert_max_num_queries
):
    now = time.time()
    apps = [App.objects.create(name=f"app_{i}") for i in range(5)]
    Session.objects.bulk_create(
        Session(app=apps[i % 5], user_id=f"u{i % 40}", session_id=f"s{i}", create_time=now, update_time=now + i,
                error_count=i % 7 == 0, tool_loop_count=i % 11 == 0)
        for i in range(3000)
    )
    eval_sets = [EvalSet.objects.create(app_name="app_0", eval_set_id=f"set{i}") for i in range(15)]
    EvalRun.objects.bulk_create(
        EvalRun(eval_set=eval_sets[i % 15], app_name="app_0", status="completed", total=2, done=2, passed=i % 3)
        for i in range(60)
    )
    home(client)  # agents load once, outside the count
    # apps, counts per app, recent, needing attention (+ its count), eval runs in
    # progress, latest run per set (2), the demo session; one more when chats run.
    with django_assert_max_num_queries(9):
        html = home(client)
    assert html.count('class="badge error">') >= 1 and ">s2999<" in section(html, "recent-sessions")
    assert section(html, "recent-sessions").count("<tr><td>") == 10
