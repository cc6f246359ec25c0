"""Google's adk-web, served at /dev-ui/ against our /api, in a real chromium: pick the app,
chat, read an event's request, the trace, and make, run and read an eval set, as an ADK
developer would; what it did is in adkui's own tables."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from eval_app.models import EvalCase, EvalRun
from inspector_app.models import ModelCall
from tests.conftest import close_worker_connections

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LISTEN = """
document.addEventListener("securitypolicyviolation", (e) => window.reportViolation(
  `${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`));
"""
# zod (adk-web's validator) tries `new Function("")` once to see whether it may compile
# validators, and validates without when it may not: the one refusal the page causes.
ZOD_PROBE = re.compile(r"^script-src blocked eval at .*/dev-ui/main-\w+\.js:\d+$")


def _side_tab(page: Any, icon: str) -> Any:
    return page.locator(f"button:has(mat-icon:text-is('{icon}'))")


def test_adk_web_chats_traces_and_evaluates_on_our_api(page: Any, live_server: Any) -> None:
    violations: list[str] = []
    page.expose_function("reportViolation", lambda text: violations.append(text))
    page.add_init_script(LISTEN)
    page.goto(live_server.url + "/dev-ui/")
    expect(page.get_by_text("Agent Development Kit")).to_be_visible()

    page.get_by_role("button", name="Select an app").click()
    page.get_by_text("trip_planner", exact=True).click()
    page.get_by_placeholder("Type a message...").fill("Please plan a trip to Kyoto")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Done! Your trip is planned.")).to_be_visible(timeout=20_000)

    # An event's Request: what the recorder kept of the model call that produced it.
    page.get_by_text('plan_trip("Kyoto")').click()
    _side_tab(page, "input").click()
    side = page.locator("app-side-panel")
    expect(side).to_contain_text("You plan trips for")
    _side_tab(page, "output").click()
    expect(side).to_contain_text("plan_trip")

    # The trace: the agent run, both model calls and the tool call, with their real durations.
    page.get_by_text("Traces", exact=True).click()
    trace = page.locator("app-trace-tree")
    expect(trace).to_contain_text("Invocation ID")
    expect(trace.get_by_text("generate_content scripted")).to_have_count(2)
    expect(trace.get_by_text("plan_trip", exact=True)).to_be_visible()
    # No span of zero length ("0us", "0.00us"); "196.10us" is a real one.
    expect(trace).not_to_contain_text(re.compile(r"(?<![\d.])0(\.0+)?us"))

    # The eval tab: a set, this session as its case, a run, its result.
    page.get_by_text("Evals", exact=True).click()
    evals = page.locator("app-eval-tab")
    evals.get_by_text("Create Evaluation Set", exact=True).click()
    dialog = page.locator("mat-dialog-container")
    dialog.locator("input").fill("kyoto_trips")
    dialog.get_by_text("Create", exact=True).click()
    evals.get_by_text("kyoto_trips", exact=True).click()
    evals.get_by_text("From Current Session").click()
    dialog.locator("input").fill("plan_kyoto")
    dialog.get_by_role("button", name="Create").click()
    expect(evals.get_by_text("plan_kyoto", exact=True)).to_be_visible()
    evals.get_by_text("Run All").click()
    dialog.get_by_role("button", name="Run").click()
    expect(evals).to_contain_text("1 PASS", timeout=30_000)
    expect(evals).to_contain_text("Tool Trajectory")

    # All of it is adkui's: the case, the run, and the recorded calls behind the trace.
    assert EvalCase.objects.get().eval_id == "plan_kyoto"
    assert EvalRun.objects.get().status == EvalRun.COMPLETED
    assert ModelCall.objects.filter(app_name="trip_planner").count() >= 2  # the chat's
    assert ModelCall.objects.filter(app_name__startswith="trip_planner@eval-").count() >= 2  # the eval's, in its sandbox
    assert [v for v in violations if not ZOD_PROBE.match(v)] == []
    assert page.js_errors == []
    close_worker_connections()


def test_adk_web_chats_for_a_logged_in_editor(page: Any, live_server: Any, settings: Any, roles: None) -> None:
    """With logins on, adk-web's calls carry the login's cookie: its POSTs pass the CSRF check."""
    settings.ADKUI_LOCAL_DEV = False
    User.objects.create_user("eddie", password="correct horse battery staple").groups.add(
        Group.objects.get(name="editor"))
    page.goto(live_server.url + "/dev-ui/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("input[name=username]", "eddie")
    page.fill("input[name=password]", "correct horse battery staple")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/dev-ui/"))
    page.get_by_role("button", name="Select an app").click()
    page.get_by_text("trip_planner", exact=True).click()
    page.get_by_placeholder("Type a message...").fill("Please plan a trip to Kyoto")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Done! Your trip is planned.")).to_be_visible(timeout=20_000)
    close_worker_connections()
    assert ModelCall.objects.filter(app_name="trip_planner").exists()
