"""The inspector's fragments and pages, the trace page and the session totals."""
from __future__ import annotations


import pytest
from asgiref.sync import async_to_sync
from django.template.loader import render_to_string
from django.urls import reverse

from inspector_app import selectors, views
from inspector_app.models import ModelCall, ToolCall
from sessions_app import timeline
from sessions_app.models import Event, Session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_commit_callbacks")]
HTMX = {"HTTP_HX_REQUEST": "true"}
EVIL_NAME = '<img src=x onerror="alert(1)">'


@pytest.fixture
def recorded(make_turns):
    """A session with three invocations: a greeting, a weather question (tool error) and a raising tool."""
    turns = async_to_sync(make_turns)({"user:name": EVIL_NAME, "topic": "volcanoes"})
    for text in ("hi", "what is the weather?", "boom"):
        async_to_sync(turns.send)(text)
    return Session.objects.get(session_id=turns.session_id)


def helper_events(session: Session) -> list[Event]:
    return list(Event.objects.filter(session=session, author="helper").order_by("seq"))


def test_the_event_inspector_highlights_state_values_with_their_keys(client, recorded):
    reply = helper_events(recorded)[0]
    html = client.get(reverse("inspector_app:event_inspector", args=[recorded.pk, reply.seq]), **HTMX).content.decode()

    assert 'id="inspector"' in html and "<html" not in html
    assert '<mark class="from-state" data-key="topic"' in html and ">volcanoes</mark>" in html
    assert '<sup class="state-key">topic?</sup>' in html and '<sup class="state-key">user:name</sup>' in html
    # Recorded text is data, never markup.
    assert EVIL_NAME not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "{user:name}" in html  # the raw template, folded
    assert "Braces like {not a key} stay." in html


def test_the_other_tabs(client, recorded):
    call = ModelCall.objects.filter(session=recorded).order_by("started_at")[1]  # asks for flaky_weather
    url = reverse("inspector_app:model_call", args=[call.pk])
    contents = client.get(url, {"tab": "contents"}, **HTMX).content.decode()
    assert "what is the weather?" in contents and "Hello &lt;b&gt;there&lt;/b&gt;!" in contents
    tools = client.get(url, {"tab": "tools"}, **HTMX).content.decode()
    assert "flaky_weather" in tools and "explode" in tools and "this station is always down" in tools
    response = client.get(url, {"tab": "response"}, **HTMX).content.decode()
    assert "flaky_weather" in response and "Oslo" in response
    usage = client.get(url, {"tab": "usage"}, **HTMX).content.decode()
    assert f"<td>{call.total_tokens:,}</td>" in usage and "latency" in usage
    assert 'aria-selected="true"' in usage and 'data-tab="usage" aria-selected="true"' in usage


def test_the_diff_tab_shows_what_changed_since_the_previous_request(client, recorded):
    first, second = ModelCall.objects.filter(session=recorded).order_by("started_at")[1:3]
    html = client.get(reverse("inspector_app:model_call", args=[second.pk]), {"tab": "diff"}, **HTMX).content.decode()
    assert '<span class="d-add">+call flaky_weather({&quot;city&quot;: &quot;Oslo&quot;})</span>' in html
    assert '<span class="d-add">+response flaky_weather: {&quot;error_message&quot;' in html
    first_html = client.get(reverse("inspector_app:model_call", args=[first.pk]), {"tab": "diff"}, **HTMX).content.decode()
    assert "first model call of its invocation" in first_html


def test_without_htmx_the_inspector_is_a_page(client, recorded):
    call = ModelCall.objects.filter(session=recorded).first()
    html = client.get(reverse("inspector_app:model_call", args=[call.pk])).content.decode()
    assert "<html" in html and 'id="inspector"' in html and "inspector.css" in html


def test_a_tool_error_appears_in_the_trace(client, recorded):
    invocation = helper_events(recorded)[-1].invocation_id  # "boom"
    html = client.get(reverse("inspector_app:invocation_trace", args=[recorded.pk, invocation])).content.decode()
    assert 'data-kind="agent"' in html and 'data-kind="model"' in html
    assert '<div class="trace-row kind-tool failed"' in html and "RuntimeError: kaboom: test" in html
    tool = ToolCall.objects.get(session=recorded, tool_name="explode")
    assert reverse("inspector_app:tool_call", args=[tool.pk]) in html


def test_the_trace_nests_calls_and_a_returned_error(client, recorded):
    invocation = ToolCall.objects.get(tool_name="flaky_weather").invocation_id
    html = client.get(reverse("inspector_app:invocation_trace", args=[recorded.pk, invocation]), **HTMX).content.decode()
    assert html.strip().startswith('<section id="trace"')
    order = [html.index(s) for s in ('data-kind="agent"', 'data-kind="model"', 'data-kind="tool"')]
    assert order == sorted(order)
    assert 'width="2.4em"' in html  # agent > model > tool (an SVG indent: the CSP allows no inline style)
    assert "1 tool call" in html and "1 error" in html


def test_an_unknown_invocation_is_404(client, recorded):
    assert client.get(reverse("inspector_app:invocation_trace", args=[recorded.pk, "nope"])).status_code == 404


def test_a_tool_call_fragment_shows_its_error(client, recorded):
    tool = ToolCall.objects.get(session=recorded, tool_name="explode")
    html = client.get(reverse("inspector_app:tool_call", args=[tool.pk]), **HTMX).content.decode()
    assert "RuntimeError: kaboom: test" in html and "&quot;reason&quot;: &quot;test&quot;" in html


def test_an_event_with_nothing_recorded_says_so(client, recorded):
    user_event = Event.objects.filter(session=recorded, author="user").first()
    html = client.get(reverse("inspector_app:event_inspector", args=[recorded.pk, user_event.seq]), **HTMX).content.decode()
    assert "Nothing was recorded for this event" in html
    assert client.get(reverse("inspector_app:event_inspector", args=[recorded.pk, 999])).status_code == 404


def test_a_tool_response_event_shows_its_tool_call(client, recorded):
    tool = ToolCall.objects.get(session=recorded, tool_name="flaky_weather")
    event = Event.objects.get(session=recorded, event_id=tool.event_id)
    html = client.get(reverse("inspector_app:event_inspector", args=[recorded.pk, event.seq]), **HTMX).content.decode()
    assert f'data-tool-call="{tool.pk}"' in html and "No weather station for Oslo." in html


def test_the_session_totals_count_tokens_and_latency(client, recorded):
    calls = list(ModelCall.objects.filter(session=recorded))
    totals = views.header_context(recorded)["inspector_totals"]
    assert totals.model_calls == len(calls) == 4
    assert totals.total_tokens == sum(c.total_tokens for c in calls)
    assert totals.tool_calls == 2 and totals.tool_errors == 2
    assert len(totals.invocations) == 3 and all(i.wall_ms > 0 for i in totals.invocations)
    html = client.get(reverse("inspector_app:session_totals", args=[recorded.pk]), **HTMX).content.decode()
    assert f'<strong class="total-tokens">{totals.total_tokens:,}</strong>' in html
    assert html.count("data-invocation=") == 3


def test_the_session_totals_count_every_invocation_but_read_only_the_newest(recorded, django_assert_num_queries):
    every = selectors.invocation_totals(recorded)
    with django_assert_num_queries(7):  # two sums, two over the invocations' spans, three for the newest two
        totals = selectors.session_totals(recorded, recent=2)
    assert totals.invocation_count == len(every) == 3
    assert [t.invocation_id for t in totals.invocations] == [t.invocation_id for t in every[-2:]]
    assert totals.invocations == every[-2:]
    assert totals.wall_ms == pytest.approx(sum(t.wall_ms or 0.0 for t in every))
    for name in ("model_calls", "model_errors", "prompt_tokens", "output_tokens", "cached_tokens", "total_tokens",
                 "model_ms", "tool_calls", "tool_errors"):
        assert getattr(totals, name) == pytest.approx(sum(getattr(t, name) for t in every)), name
    html = render_to_string("inspector_app/partials/session_totals.html", {"session": recorded, "inspector_totals": totals})
    assert "per invocation (3)" in html and html.count("data-invocation=") == 2 and "The 2 most recent shown." in html


def test_the_timeline_rows_link_the_inspector_for_agent_rows_only(recorded):
    rows = list(Event.objects.filter(session=recorded).order_by("seq"))
    html = {v.seq: render_to_string("sessions_app/partials/event_row.html", {"session": recorded, "view": v})
            for v in timeline.views_for(recorded, rows)}
    reply = helper_events(recorded)[0]
    inspect = f'hx-get="{reverse("inspector_app:event_inspector", args=[recorded.pk, reply.seq])}" hx-target="#side-dialog"'
    assert inspect in html[reply.seq]
    user = Event.objects.filter(session=recorded, author="user").first()
    assert reverse("inspector_app:event_inspector", args=[recorded.pk, user.seq]) not in html[user.seq]
    # The invocation's header, on its first row, links its trace.
    first = min(r.seq for r in rows if r.invocation_id == reply.invocation_id)
    assert reverse("inspector_app:invocation_trace", args=[recorded.pk, reply.invocation_id]) in html[first]
