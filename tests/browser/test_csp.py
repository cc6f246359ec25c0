"""The Content-Security-Policy in a real chromium: every page works with no
violation and no console error (no inline script, handler, style or eval
anywhere), htmx included, and so do the API docs and Django's admin."""
from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connections
from playwright.sync_api import expect

from inspector_app.models import ModelCall
from runtime_app.demo import DEMO_SESSION, load_demo
from sessions_app.models import Session as SessionRow
from tests.conftest import close_worker_connections, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before any script of every page, from the browser's side (the page's CSP does not apply to it).
LISTEN = """
document.addEventListener("securitypolicyviolation", (e) => window.reportViolation(
  `${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber} on ${location.pathname}`));
document.addEventListener("htmx:evalDisallowedError", () => window.reportViolation(`htmx eval on ${location.pathname}`));
"""


def _favicon(message: Any) -> bool:
    # Chromium asks for /favicon.ico by itself; no page names one, so it is a 404 of no page's making.
    return (message.location.get("url") or "").endswith("/favicon.ico")


@pytest.fixture
def watched(page: Any) -> Iterator[tuple[Any, list[str]]]:
    """The page, and what it reported: CSP violations, console errors and warnings, page errors."""
    problems: list[str] = []
    page.expose_function("reportViolation", lambda text: problems.append(text))
    page.add_init_script(LISTEN)
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text} ({m.location.get('url')})")
            if m.type in ("error", "warning") and not _favicon(m) else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    yield page, problems


def _load_demo() -> None:
    load_demo()  # runs the demo agent with asyncio.run: in a thread of its own, free of Playwright's loop
    connections.close_all()
    close_worker_connections()


@pytest.fixture
def demo(live_server: Any) -> int:
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_load_demo).result(timeout=120)
    return SessionRow.objects.get(session_id=DEMO_SESSION).pk


def settled(page: Any) -> None:
    # A function, not an expression: Playwright polls an expression with eval, which the policy forbids.
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


def test_the_listener_catches_a_violation(watched, live_server, demo):
    page, problems = watched
    page.goto(f"{live_server.url}/")
    page.evaluate("document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">inline</p>')")
    expect(page.locator("body")).to_contain_text("inline")
    page.wait_for_function("true")
    assert any("style-src" in p for p in problems), problems


def test_every_header_is_strict(live_server, demo, page):
    policy = page.goto(f"{live_server.url}/").headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy and "nonce-" not in policy


def test_the_pages_work_with_no_violation(watched, live_server, demo):
    page, problems = watched
    base = live_server.url

    page.goto(f"{base}/")
    expect(page.get_by_role("link", name="trip_planner").first).to_be_visible()
    page.goto(f"{base}/apps/trip_planner/")
    expect(page.locator("body")).to_contain_text(DEMO_SESSION)

    # The session page: the timeline, its websocket, and htmx clicks.
    page.goto(f"{base}/sessions/{demo}/?at=3")  # the demo's start too, not only the first screen's newest events
    expect(page.locator("#live-label")).to_have_text("live")
    expect(page.locator("#timeline .event").first).to_be_visible()
    page.locator("#event-2 .head").click()  # a row click: no htmx trigger filter, no eval
    expect(page.locator("#state-panel")).to_contain_text("State as of #2")
    page.locator("#event-0 .head").click()
    expect(page.locator("#state-panel")).to_contain_text("State as of #0")
    settled(page)
    page.locator("#event-2 button:has-text('rewind')").click()
    expect(page.locator("#rewind-card")).to_be_visible()
    page.locator("#rewind-card button:has-text('Cancel')").click()  # data-close, not onclick
    expect(page.locator("#rewind-card")).to_have_count(0)
    # The artifacts and memory panels load into the page (and the artifacts panel brings its script).
    expect(page.locator("#artifacts-panel")).to_be_visible()
    expect(page.locator("#memory-panel")).to_be_visible()

    # An invocation's trace: bars and indents drawn without style="".
    invocation = ModelCall.objects.filter(session_id=demo).values_list("invocation_id", flat=True).first()
    page.goto(f"{base}/inspect/sessions/{demo}/invocations/{invocation}/")
    expect(page.locator(".trace-row .bar").first).to_be_visible()
    assert page.locator(".trace-row[data-kind=model] .indent").first.bounding_box()["width"] > 0

    page.goto(f"{base}/memory/sessions/{demo}/conversation/")
    expect(page.locator("body")).to_contain_text("History")

    # Evals: run the demo set; the progress bar fills over the websocket.
    page.goto(f"{base}/evals/")
    page.get_by_role("link", name=re.compile("trip_planner")).first.click()
    page.wait_for_url(re.compile(r"/evals/sets/\d+/$"))
    page.click("#run-button")
    page.wait_for_url(re.compile(r"/evals/runs/\d+/$"))
    page.wait_for_function(
        "() => document.querySelector('#run-progress .progress').getAttribute('aria-valuenow') === '100'", timeout=60_000)
    # The last progress broadcasts may still swap #run-progress, and a rect caught mid-swap has no box.
    bar = page.locator("#run-progress rect")
    wait_until(lambda: (bar.bounding_box() or {}).get("width", 0) > 0, timeout=10,
               message="the progress bar stayed empty")
    page.go_back()
    page.reload()
    expect(page.locator("figure.trend .legend svg").first).to_be_visible()

    page.goto(f"{base}/api/docs/")
    # The page waits for the schema, generated on its first request: over 5 s on a slow 2-core CI machine.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("adkui API", timeout=30_000)
    expect(page.locator(".opblock").first).to_be_visible()

    page.goto(f"{base}/accounts/login/")
    expect(page.get_by_role("button", name="Log in")).to_be_visible()
    assert problems == []


def test_the_inspector_opens_and_closes(watched, live_server, demo):
    page, problems = watched
    page.goto(f"{live_server.url}/sessions/{demo}/")
    page.locator("#timeline button:has-text('inspect')").first.click()
    expect(page.locator("#event-inspector")).to_be_visible()
    page.locator("#event-inspector button[title=close]").first.click()
    expect(page.locator("#event-inspector")).to_have_count(0)
    assert problems == []


def test_the_admin_works_with_no_violation(watched, live_server):
    page, problems = watched
    User.objects.create_superuser("root", password="correct horse battery staple")
    page.goto(f"{live_server.url}/admin/")
    page.fill("input[name=username]", "root")
    page.fill("input[name=password]", "correct horse battery staple")
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()
    page.goto(f"{live_server.url}/admin/auth/user/")
    expect(page.locator("#result_list")).to_contain_text("root")
    page.goto(f"{live_server.url}/admin/auth/group/")
    expect(page.locator("#content h1")).to_contain_text("group")
    page.goto(f"{live_server.url}/admin/auth/user/add/")
    expect(page.locator("input[name=username]")).to_be_visible()
    assert problems == []


def test_a_viewer_logs_in_watches_live_and_is_told_a_change_is_not_allowed(watched, live_server, demo, settings, roles):
    page, problems = watched
    settings.ADKUI_LOCAL_DEV = False
    User.objects.create_user("vera", password="correct horse battery staple").groups.add(Group.objects.get(name="viewer"))

    page.goto(f"{live_server.url}/sessions/{demo}/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("input[name=username]", "vera")
    page.fill("input[name=password]", "correct horse battery staple")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(rf"/sessions/{demo}/$"))
    expect(page.locator("#live-label")).to_have_text("live")  # a viewer's websocket opens
    page.goto(f"{live_server.url}/sessions/{demo}/?at=3")
    expect(page.locator("#live-label")).to_have_text("live")
    page.locator("#event-2 .head").click()
    expect(page.locator("#state-panel")).to_contain_text("State as of #2")
    settled(page)
    page.locator("#event-2 button:has-text('fork')").click()  # asking is reading: the preview shows
    page.locator("#fork-confirm").click()
    expect(page.locator("#refused")).to_contain_text("Not allowed")
    assert SessionRow.objects.count() == 1
    # The refused request is the only console error (the browser and htmx each report the 403).
    assert [p for p in problems if "403" not in p] == []


def test_a_refused_upload_shows_its_error_under_the_policy(watched, live_server, demo):
    """The artifacts panel swaps in its 400 answer (swap_status.js, which the panel loads, not hx-on)."""
    page, problems = watched
    page.goto(f"{live_server.url}/sessions/{demo}/")
    panel = page.locator("#artifacts-panel")
    expect(panel).to_be_visible()
    settled(page)
    panel.locator("input[name=file]").set_input_files({"name": "x.txt", "mimeType": "text/plain", "buffer": b"x"})
    panel.get_by_label("Artifact name").fill("../../escape.txt")
    panel.get_by_role("button", name="Upload", exact=True).click()
    expect(panel.locator(".form-error")).to_contain_text("path traversal")
    assert [p for p in problems if "400" not in p] == []
