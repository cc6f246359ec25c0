"""The Artifacts and Memory panels and the conversation page in a real headless chromium.

The panels are loaded the way the session page loads them
(`<div hx-get=... hx-trigger="load">`), from a host page served on the live
server's origin, so this tests the fragments standalone.

Named to sort last in this folder: Playwright's sync API keeps an event loop
running on the main thread while the shared `browser` fixture is open, and
any async test that runs after it fails.
"""
from __future__ import annotations

import base64
import re

import pytest
from django.template import engines
from google.adk.events.event import Event
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoArtifactService, DjangoMemoryService, DjangoSessionService
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP, USER = "browser_mem", "ann"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def said(author: str, text: str) -> Event:
    return Event(author=author, content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]))


def _make_data() -> int:
    sessions, artifacts = DjangoSessionService(), DjangoArtifactService()
    s = sessions.create_session_sync(app_name=APP, user_id=USER, session_id="b1")
    sessions.append_event_sync(s, said("user", "weather in Paris and Oslo?"))
    calls = [types.Part(function_call=types.FunctionCall(id=f"c-{c}", name="weather", args={"city": c})) for c in ("Paris", "Oslo")]
    sessions.append_event_sync(s, Event(author="bot", content=types.Content(role="model", parts=calls)))
    results = [
        types.Part(function_response=types.FunctionResponse(id="c-Oslo", name="weather", response={"status": "error", "error_message": "down"})),
        types.Part(function_response=types.FunctionResponse(id="c-Paris", name="weather", response={"forecast": "sun"})),
    ]
    sessions.append_event_sync(s, Event(author="bot", content=types.Content(role="user", parts=results)))
    sessions.append_event_sync(s, said("bot", "Sunny in Paris; Oslo's station is down."))
    save = lambda name, part: artifacts.save_artifact_sync(app_name=APP, user_id=USER, session_id="b1", filename=name, artifact=part)  # noqa: E731
    save("report.txt", types.Part(text="first draft"))
    save("report.txt", types.Part(text="second draft"))
    save("user:prefs.json", types.Part(text='{"tea": "green"}'))
    save("pic.png", types.Part(inline_data=types.Blob(mime_type="image/png", data=PNG)))
    earlier = said("user", "My sister lives in Porto")
    DjangoMemoryService().add_events_to_memory_sync(app_name=APP, user_id=USER, session_id="old", events=[earlier])
    return SessionRow.objects.get(session_id="b1").pk


def settled(page) -> None:
    """Wait until htmx has processed swapped-in content (it does so after its settle delay)."""
    # A function, not an expression: Playwright polls an expression with eval, which the page's CSP forbids.
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


@pytest.fixture
def pk(live_server) -> int:
    return live_server.call(_make_data)


@pytest.fixture
def host(page, live_server, pk):
    """A page that loads both panels exactly as the session page does."""
    htmx = engines["django"].from_string("{% load django_htmx %}{% htmx_script %}").render({})
    html = (
        f"<!doctype html><html><head>{htmx}</head><body>"
        f'<div hx-get="/memory/sessions/{pk}/artifacts/" hx-trigger="load"></div>'
        f'<div hx-get="/memory/sessions/{pk}/memory/" hx-trigger="load"></div>'
        "</body></html>"
    )
    # A real page (base.html) sets the CSRF cookie before its panels load;
    # without it, two panels loading at once would each set a different one.
    page.goto(f"{live_server.url}/memory/sessions/{pk}/conversation/")
    page.route(f"{live_server.url}/panel-host/", lambda route: route.fulfill(status=200, content_type="text/html", body=html))
    page.goto(f"{live_server.url}/panel-host/")
    return page


def test_the_artifacts_panel_lists_picks_versions_previews_uploads_and_deletes(host):
    page = host
    panel = page.locator("#artifacts-panel")
    expect(panel.locator(".artifact-list")).to_contain_text("report.txt")
    expect(panel.locator(".artifact-list")).to_contain_text("user:prefs.json")
    settled(page)

    panel.get_by_role("link", name="report.txt").click()
    expect(panel.locator(".artifact-preview")).to_contain_text("second draft")
    settled(page)
    panel.get_by_label("Version").select_option("0")
    expect(panel.locator(".artifact-preview")).to_contain_text("first draft")
    settled(page)

    panel.get_by_role("link", name="pic.png").click()
    expect(panel.locator(".artifact-preview img")).to_be_visible()
    page.wait_for_function("() => document.querySelector('.artifact-preview img').naturalWidth === 1")
    settled(page)

    panel.get_by_role("link", name="user:prefs.json").click()
    expect(panel.locator(".artifact-preview")).to_contain_text('"tea": "green"')
    settled(page)

    panel.locator("input[name=file]").set_input_files({"name": "todo.txt", "mimeType": "text/plain", "buffer": b"walk the dog"})
    panel.get_by_role("button", name="Upload", exact=True).click()
    expect(panel.locator(".mem-notice")).to_have_text("Saved todo.txt version 0.")
    expect(panel.locator(".artifact-preview")).to_contain_text("walk the dog")
    settled(page)

    panel.locator("input[name=file]").set_input_files({"name": "x.txt", "mimeType": "text/plain", "buffer": b"x"})
    panel.get_by_label("Artifact name").fill("../../escape.txt")
    panel.get_by_role("button", name="Upload", exact=True).click()
    expect(panel.locator(".form-error")).to_contain_text("path traversal")  # a 400, swapped in all the same
    settled(page)

    panel.get_by_role("link", name="todo.txt").click()
    expect(panel.locator(".artifact-preview")).to_contain_text("walk the dog")
    settled(page)
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Delete").click()
    expect(panel.locator(".mem-notice")).to_contain_text("Deleted todo.txt")
    expect(panel.locator(".artifact-list")).not_to_contain_text("todo.txt")
    assert not page.js_errors


def test_the_memory_panel_adds_the_session_searches_and_forgets(host, pk):
    page = host
    panel = page.locator("#memory-panel")
    expect(panel).to_contain_text("not in memory yet")
    settled(page)
    panel.get_by_role("button", name="Add this session to memory").click()
    expect(panel).to_contain_text("In memory up to event #4")
    settled(page)

    panel.get_by_label("Search memory").fill("where does my sister live, Porto?")
    panel.get_by_role("button", name="Search").click()
    result = panel.locator(".mem-result").first
    expect(result).to_contain_text("My sister lives in Porto")
    expect(result).to_contain_text("session old")
    settled(page)

    panel.get_by_label("Search memory").fill("Paris Oslo")
    panel.get_by_role("button", name="Search").click()
    expect(panel.locator(".mem-result").first).to_contain_text("Paris")
    settled(page)
    link = panel.locator(".mem-result").first.get_by_role("link", name="session b1")
    expect(link).to_have_attribute("href", re.compile(rf"/{pk}/"))
    before = panel.locator(".mem-result").count()
    panel.locator(".mem-result").first.get_by_role("button", name="Forget").click()
    expect(panel.locator(".mem-notice")).to_have_text("Forgotten.")
    expect(panel.locator(".mem-result")).to_have_count(before - 1)
    assert not page.js_errors


def test_the_conversation_page_links_parallel_calls_to_their_results(page, live_server, pk):
    page.goto(f"{live_server.url}/memory/sessions/{pk}/conversation/")
    history = page.locator("section[aria-labelledby=conv-history]")
    oslo = history.locator(".call[data-call-id='c-Oslo']")
    expect(oslo.locator(".pair-link")).to_have_text("result (error) ↓")
    settled(page)
    oslo.locator(".pair-link").click()
    target = history.locator("li.msg:target")
    expect(target).to_have_attribute("data-result-id", "c-Oslo")
    expect(target).to_contain_text("tool error")
    settled(page)
    target.get_by_role("link", name="↑ call").click()
    expect(history.locator(".call:target")).to_have_attribute("data-call-id", "c-Oslo")
    settled(page)
    paris = history.locator(".call[data-call-id='c-Paris']")
    paris.locator(".pair-link").click()
    expect(history.locator("li.msg:target")).to_contain_text("sun")
    expect(page.locator("section[aria-labelledby=conv-model]")).to_contain_text("Sunny in Paris")
    assert not page.js_errors
