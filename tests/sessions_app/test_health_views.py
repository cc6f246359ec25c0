"""The session browser's health columns, sorts and "needs attention" filter, and the session header."""
from __future__ import annotations

import re

import pytest
from google.adk.events.event import Event as AdkEvent
from google.genai import types

from sessions_app import selectors, services
from sessions_app.keys import SessionKey
from sessions_app.models import App, Session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
APP = "health_app"
PRICES = {"gemini-2.5-flash": {"input": 0.30, "output": 2.50, "cached": 0.03}}


def append(session_id: str, event: AdkEvent) -> None:
    services.event_append(key=SessionKey(APP, "ann", session_id), event=event)


def failed_tool(invocation_id: str = "inv") -> AdkEvent:
    part = types.Part(function_response=types.FunctionResponse(name="t", response={"error": "down"}))
    return AdkEvent(author="agent", invocation_id=invocation_id, content=types.Content(role="user", parts=[part]))


def reply(prompt: int, output: int, model: str = "gemini-2.5-flash") -> AdkEvent:
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=prompt, candidates_token_count=output)
    return AdkEvent(author="agent", model_version=model, usage_metadata=usage,
                    content=types.Content(role="model", parts=[types.Part(text="ok")]))


def call(invocation_id: str) -> AdkEvent:
    part = types.Part(function_call=types.FunctionCall(name="t", args={"a": 1}))
    return AdkEvent(author="agent", invocation_id=invocation_id, content=types.Content(role="model", parts=[part]))


@pytest.fixture
def sessions(settings) -> dict[str, Session]:
    """quiet: healthy, many tokens; two-errors; one-error, priciest; looping: a tool loop; slow: highest TTFT."""
    settings.ADKUI_MODEL_PRICES = PRICES
    for name in ("quiet", "two-errors", "one-error", "looping", "slow"):
        services.session_create(app_name=APP, user_id="ann", session_id=name)
    append("quiet", reply(90_000, 10))
    append("two-errors", failed_tool())
    append("two-errors", failed_tool())
    append("one-error", failed_tool())
    append("one-error", reply(1_000, 20_000))
    append("looping", call("i"))
    append("looping", call("i"))
    found = {s.session_id: s for s in Session.objects.filter(app__name=APP)}
    services.session_health_record_model_call(session_pk=found["slow"].pk, request_fingerprint=None, ttft_ms=900.0)
    services.session_health_record_model_call(session_pk=found["quiet"].pk, request_fingerprint=None, ttft_ms=120.0)
    return found


def listed(client, query: str = "") -> list[str]:
    response = client.get(f"/apps/{APP}/{query}")
    assert response.status_code == 200
    return re.findall(r'class="mono">([^<]+)</a>', response.content.decode())


@pytest.mark.parametrize(("sort", "first"), [
    ("-errors", ["two-errors", "one-error"]),
    ("-loops", ["looping"]),
    ("-tokens", ["quiet", "one-error"]),
    ("-cost", ["one-error", "quiet"]),
    ("-ttft", ["slow", "quiet"]),
    ("ttft", ["quiet", "slow"]),
])
def test_the_browser_sorts_by_each_signal_with_unknown_values_last(client, sessions, sort, first):
    names = listed(client, f"?sort={sort}")
    assert names[: len(first)] == first
    assert sorted(names) == sorted(sessions)


def test_needs_attention_keeps_sessions_with_errors_loops_or_repeated_requests(client, sessions):
    services.session_health_record_model_call(session_pk=sessions["slow"].pk, request_fingerprint=1, ttft_ms=None)
    services.session_health_record_model_call(session_pk=sessions["slow"].pk, request_fingerprint=1, ttft_ms=None)
    assert sorted(listed(client, "?attention=1&sort=-errors")) == ["looping", "one-error", "slow", "two-errors"]
    assert sorted(listed(client, "?attention=0")) == sorted(sessions)


@pytest.mark.parametrize("query", ["?sort=nope", "?sort=-update_time", "?sort=", "?sort=__class__",
                                   "?attention=maybe", "?sort=-cost&page=x", "?sort=-errors&page=999"])
def test_bad_sort_and_filter_values_fall_back_and_never_fail(client, sessions, query):
    assert sorted(listed(client, query)) == sorted(sessions)


def test_the_browser_row_shows_errors_loops_tokens_cost_and_ttft(client, sessions):
    html = client.get(f"/apps/{APP}/?q=one-error").content.decode()
    row = html[html.index('id="session-row-'):]
    assert re.search(r'data-signal="errors"[^>]*><span class="badge error">1</span>', row)
    assert re.search(r'data-signal="tokens"[^>]*>21.0k<', row)
    cost = (1_000 * 0.30 + 20_000 * 2.50) / 1e6
    assert re.search(rf'data-signal="cost"[^>]*>\${cost:.4f}<', row)
    assert re.search(r'data-signal="ttft"[^>]*>—<', row)  # no model call recorded: unknown, not 0


def test_the_session_header_shows_the_figures_with_units_and_unknowns_as_a_dash(client, sessions, settings):
    settings.ADKUI_MODEL_PRICES = {}
    append("one-error", reply(500, 5))  # a model with no price now: the cost is partial
    session = Session.objects.get(session_id="one-error")
    html = client.get(f"/sessions/{session.pk}/").content.decode()
    header = html[html.index('id="session-health"'):]
    header = header[: header.index("</div>")]
    assert re.search(r'data-signal="errors"[^>]*>1 error<', header)
    assert re.search(r'data-signal="tokens"[^>]*>1500 in \(0 cached\) / 20005 out tokens<', header)
    assert re.search(r'data-signal="cost"[^>]*>≥ \$0.05', header)
    assert re.search(r'data-signal="ttft"[^>]*>first token —<', header)
    fresh = Session.objects.get(session_id="looping")
    html = client.get(f"/sessions/{fresh.pk}/").content.decode()
    assert re.search(r'data-signal="cost"[^>]*>—<', html)  # no priced response at all: unknown


def test_the_error_kind_filter_finds_tool_errors_and_error_codes(client, sessions):
    append("looping", AdkEvent(author="agent", invocation_id="i", error_code="MALFORMED_FUNCTION_CALL"))
    session = Session.objects.get(session_id="looping")
    rows = selectors.event_rows_before(session, before=None, filters=selectors.Filters(kind="error"), limit=10)
    assert [r.error_code for r in rows] == ["MALFORMED_FUNCTION_CALL"]
    append("two-errors", reply(10, 1))
    two = Session.objects.get(session_id="two-errors")
    rows = selectors.event_rows_before(two, before=None, filters=selectors.Filters(kind="error"), limit=10)
    assert [r.seq for r in rows] == [2, 1]
    html = client.get(f"/sessions/{two.pk}/?kind=error").content.decode()
    assert re.findall(r'<article id="event-([1-9]\d*)"', html) == ["1", "2"]


def test_session_browser_selector_takes_no_app():
    assert list(selectors.session_browser(app=None, needing_attention=True)) == []
    assert not App.objects.filter(name=APP).exists()
