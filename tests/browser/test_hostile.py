"""Fifty hostile payloads in everything an agent or a user can write, opened in
headless chromium on every page that shows them: no script runs, no layout breaks."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoArtifactService, DjangoSessionService
from sessions_app import timeline
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
APP = "hostile_app"
MARK = "window.__xss=(window.__xss||0)+1"


def _payloads() -> list[str]:
    """Fifty strings: tags, handlers, URLs, quote breakers, template syntax, huge and odd text."""
    base = [
        f"<script>{MARK}</script>",
        f"<img src=x onerror=\"{MARK}\">",
        f"<svg onload={MARK}>",
        f"<svg><script>{MARK}</script></svg>",
        f"<iframe src=\"javascript:{MARK}\"></iframe>",
        f"[click](javascript:{MARK})",
        f"[x](JaVaScRiPt:{MARK})",
        f"<a href=\"javascript:{MARK}\">link</a>",
        f"<a href=\"  javascript:{MARK}\">spaced</a>",
        f"<a href=\"data:text/html,<script>{MARK}</script>\">data</a>",
        f"\"><script>{MARK}</script>",
        f"'><img src=x onerror={MARK}>",
        f"</textarea><script>{MARK}</script>",
        f"</title><script>{MARK}</script>",
        f"<body onload={MARK}>",
        f"<details open ontoggle={MARK}>",
        f"<input autofocus onfocus={MARK}>",
        f"<math><mtext><table><mglyph><style><img src=x onerror={MARK}>",
        f"<object data=\"javascript:{MARK}\"></object>",
        f"<embed src=\"javascript:{MARK}\">",
        f"<form action=\"javascript:{MARK}\"><button>go</button></form>",
        f"<style>@import 'javascript:{MARK}';</style>",
        f"<div style=\"background:url(javascript:{MARK})\">bg</div>",
        f"<meta http-equiv=\"refresh\" content=\"0;url=javascript:{MARK}\">",
        f"<base href=\"javascript:{MARK}//\">",
        f"<video><source onerror=\"{MARK}\"></video>",
        f"<audio src=x onerror={MARK}>",
        f"<marquee onstart={MARK}>m</marquee>",
        f"<template><script>{MARK}</script></template>",
        f"<noscript><p title=\"</noscript><img src=x onerror={MARK}>\"></noscript>",
        "{{ 7*7 }} {% debug %} ${7*7} #{7*7}",
        "hx-get=\"/admin/\" hx-trigger=\"load\"",
        f"<div hx-on:htmx:load=\"{MARK}\">htmx attr</div>",
        f"<div hx-get=\"/\" hx-trigger=\"load\" hx-on::after-request=\"{MARK}\">h</div>",
        "\u202eevil right-to-left override\u202c",
        "zero\u200bwidth\u200bjoiner",
        "emoji 🧨💥 and CJK 漢字 and combining e\u0301",
        "line\nbreaks\r\nand\ttabs",
        "back`ticks` and ```code fence <script>x</script>```",
        "&lt;script&gt;already escaped&lt;/script&gt;",
        "%3Cscript%3Eurlencoded%3C/script%3E",
        "\\u003cscript\\u003ejson escaped\\u003c/script\\u003e",
        "W" * 20_000,
        ("long words " + "x" * 3000 + " ") * 5,
        "<" * 500 + ">" * 500,
        "\"" * 300 + "'" * 300,
        f"<table><tr><td>unclosed <b>bold <i>italic <script>{MARK}</script>",
        "</div></div></div></main><h1>escaped?</h1>",
        f"<img src=\"x\" alt=\"\" onerror=\"{MARK}\"/>",
        f"<svg><animate onbegin={MARK} attributeName=x dur=1s>",
    ]
    assert len(base) == 50
    return base


PAYLOADS = _payloads()


def _deep(levels: int) -> dict:
    node: dict = {"leaf": PAYLOADS[0]}
    for i in range(levels):
        node = {f"level{i}": node}
    return node


def _seed() -> tuple[int, int]:
    service = DjangoSessionService()
    hostile_id = "<img src=x onerror=alert(9)>-session"
    session = service.create_session_sync(app_name=APP, user_id="<script>u</script>", session_id=hostile_id,
                                          state={"<b>key</b>": PAYLOADS[1]})
    for i, payload in enumerate(PAYLOADS):
        call = types.Part.from_function_call(name="lookup", args={"q": payload, "n": i})
        service.append_event_sync(session, Event(
            author="agent", invocation_id=f"inv-{i // 10}",
            content=types.Content(role="model", parts=[types.Part(text=payload), call]),
            actions=EventActions(state_delta={f"k{i}": payload, "user:last": payload, "app:last": payload}),
        ))
    service.append_event_sync(session, Event(author="agent", invocation_id="inv-deep",
                                              actions=EventActions(state_delta={"deep": _deep(60)}),
                                              error_code="<script>E</script>", error_message=PAYLOADS[2]))
    artifacts = DjangoArtifactService()
    for name in ("<img src=x onerror=alert(7)>.txt", "\"><svg onload=alert(8)>.json", "ok.txt"):
        artifacts.save_artifact_sync(app_name=APP, user_id=session.user_id, session_id=session.id, filename=name,
                                     artifact=types.Part.from_text(text=PAYLOADS[0]))
    _seed_eval_set()
    return SessionRow.objects.get(session_id=hostile_id).pk, len(PAYLOADS)


def _seed_eval_set() -> None:
    from eval_app import services
    from eval_app.evalset_files import parse_eval_set_file

    def turn(i: int, text: str) -> dict:
        return {
            "invocation_id": f"t{i}",
            "user_content": {"role": "user", "parts": [{"text": text}]},
            "final_response": {"role": "model", "parts": [{"text": text}]},
            "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"q": text}}]},
        }

    cases = [{"eval_id": f"case-{n}", "conversation": [turn(i, p) for i, p in enumerate(PAYLOADS[n * 10:(n + 1) * 10])]}
             for n in range(5)]
    content = json.dumps({"eval_set_id": "hostile-set", "name": PAYLOADS[0], "description": PAYLOADS[1],
                          "eval_cases": cases}).encode()
    services.eval_set_import(parsed=parse_eval_set_file(filename="hostile.evalset.json", content=content), app_name=APP)


@pytest.fixture
def hostile(live_server):
    return live_server.call(_seed)


def assert_inert(page, url: str) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None, f"a script ran on {url}"
    assert dialogs == [], f"dialogs on {url}: {dialogs}"
    assert page.js_errors == [], page.js_errors
    dangerous = "script:not([src]):not([data-htmx-powered]), [onerror], [onload], [onfocus], [ontoggle], iframe, object, embed, a[href^='javascript' i]"
    assert page.locator(f"main {dangerous}").count() == 0, url
    # No payload may widen the page beyond the viewport or hide the header.
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] + 2, f"{url} overflows horizontally: {width}"
    expect(page.locator("header.topbar")).to_be_visible()


def test_hostile_payloads_render_inert_on_every_page(page, live_server, hostile):
    pk, count = hostile
    base = live_server.url
    assert_inert(page, f"{base}/sessions/{pk}/")
    expect(page.locator("#timeline article.event")).to_have_count(timeline.FIRST_PAGE)  # the newest; older on request
    # Reach the top as a reader does: the button loads on intersect, so a click can race its own swap.
    page.evaluate("document.getElementById('timeline').scrollTop = 0")
    expect(page.locator("#timeline article.event")).to_have_count(count + 2)  # all events + "session created"
    page.locator(f"#event-{count} .head").click()
    expect(page.locator("#state-panel")).to_contain_text(f"State as of #{count}")
    page.get_by_role("link", name="user:last").click()
    expect(page.locator("#key-history")).to_contain_text("History of user:last")
    assert page.evaluate("window.__xss") is None
    expect(page.locator("#artifacts-panel, .artifacts-panel").first).to_be_visible()
    assert_inert(page, f"{base}/apps/{APP}/")
    assert_inert(page, base + reverse("memory_app:conversation", args=[pk]))
    assert_inert(page, f"{base}/")
    from eval_app.models import EvalCase, EvalSet

    eval_set = EvalSet.objects.get(eval_set_id="hostile-set")
    assert_inert(page, f"{base}/evals/")
    assert_inert(page, base + reverse("eval_app:eval_set_detail", args=[eval_set.pk]))
    for case in EvalCase.objects.filter(eval_set=eval_set):
        assert_inert(page, base + reverse("eval_app:case_edit", args=[case.pk]))


def test_hostile_state_json_is_shown_not_parsed(page, live_server, hostile):
    pk, _ = hostile
    assert_inert(page, f"{live_server.url}/sessions/{pk}/?kind=error")
    assert "error <script>E</script>" in page.locator("#timeline").inner_text()  # the error code, as text
    page.locator("#timeline article.event").last.locator(".head").click()
    panel = page.locator("#state-panel")
    expect(panel).to_contain_text("level59")  # 60 levels of JSON, shown folded
    assert PAYLOADS[0] in panel.inner_text()
