"""Long eval lists page in chromium (#27): a run's results arrive live on top while it runs,
and once it is over the page shows the newest page, "older results" loading the rest below,
each row once; a set's cases page with "more cases" the same way, and the compare page too."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from eval_app import metrics, selectors, services
from eval_app.models import EvalCaseResult, EvalRun
from tests.eval_app.conftest import AGENT, demo_set  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RESULTS_PAGE, CASES_PAGE = 4, 2  # small pages, so the demo's few cases make several


SOCKET_WATCH = """window.socketFrames = 0;
document.addEventListener('htmx:wsOpen', () => { window.socketOpen = true; });
document.addEventListener('htmx:wsAfterMessage', () => { window.socketFrames += 1; });"""


def result_pks(page) -> list[int]:
    return [int(i.removeprefix("result-")) for i in page.locator("#case-results tr.result").evaluate_all(
        "rows => rows.map(r => r.id)")]


def test_a_runs_results_page_through_older_results_after_arriving_live(live_server, page, settings, monkeypatch,
                                                                      demo_set):  # noqa: F811
    monkeypatch.setattr(selectors, "RESULTS_PAGE", RESULTS_PAGE)  # the live server runs in this process
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    run = services.eval_run_create(eval_set=demo_set, app_name=AGENT, repeats=3,
                                   metrics=metrics.eval_metrics({"response_match_score": 0.8}))
    page.add_init_script(SOCKET_WATCH)
    page.goto(f"{live_server.url}/evals/runs/{run.pk}/")
    expect(page.locator("#run-status")).to_have_text("queued")
    # Run only once the page listens: a socket opened later is sent the newest page
    # and "older results" (as it should), which is not what this part watches.
    page.wait_for_function("() => window.socketOpen === true")
    live_server.call(services.eval_run_execute_inline, EvalRun.objects.get(pk=run.pk))
    expect(page.locator("#run-status")).to_have_text("completed", timeout=60_000)
    newest_first = list(run.results.order_by("-pk").values_list("pk", flat=True))
    assert len(newest_first) > 2 * RESULTS_PAGE
    # Watched live, every row arrived, each on top of the ones before it; no button was needed.
    expect(page.locator("#case-results tr.result")).to_have_count(len(newest_first))
    assert result_pks(page) == newest_first and page.locator("#results-older").count() == 0

    # Reloaded, the page's socket is held before it reaches the server, so "older results" is
    # clicked through before the socket's snapshot arrives, as on a slow connection.
    held = []
    page.route_web_socket(f"**/ws/evals/runs/{run.pk}/**", lambda ws: held.append(ws))
    page.evaluate("window.socketFrames = 0")
    page.reload()
    expect(page.locator("#case-results tr.result")).to_have_count(RESULTS_PAGE)
    clicks = 0
    while page.locator("#results-older").count():
        shown = page.locator("#case-results tr.result").count()
        page.click("#results-older a")
        expect(page.locator("#case-results tr.result")).to_have_count(min(shown + RESULTS_PAGE, len(newest_first)))
        clicks += 1
    assert clicks == -(-len(newest_first) // RESULTS_PAGE) - 1
    assert len(held) == 1 and held[0].url.endswith(f"?after={newest_first[0]}")  # the newest row it holds
    held[0].connect_to_server()
    page.wait_for_function("() => window.socketFrames >= 1")  # the run's header: no row was missed
    expect(page.locator("#run-status")).to_have_text("completed")
    assert result_pks(page) == newest_first  # the rows loaded before the snapshot stay
    assert page.url.endswith(f"/evals/runs/{run.pk}/")  # loaded in place, the address unchanged
    assert page.js_errors == []


def test_a_sets_cases_page_with_more_cases(live_server, page, monkeypatch, demo_set):  # noqa: F811
    monkeypatch.setattr(selectors, "CASES_PAGE", CASES_PAGE)
    page.goto(f"{live_server.url}/evals/sets/{demo_set.pk}/")
    total = demo_set.cases.count()
    expect(page.locator("#case-count")).to_have_text(str(total))
    expect(page.locator("table.cases tbody tr[id^=case-]")).to_have_count(CASES_PAGE)
    rows = page.locator("table.cases tbody tr[id^=case-]")
    while page.locator("#cases-more").count():
        shown = rows.count()
        page.click("#cases-more a")
        expect(rows).to_have_count(min(shown + CASES_PAGE, total))
    ids = rows.locator("td:nth-child(2)").all_inner_texts()
    assert ids == list(demo_set.cases.order_by("position", "pk").values_list("eval_id", flat=True))
    # A case from a later page is chosen like any other: its box belongs to the run form.
    page.check(f"input[name=eval_ids][value={ids[-1]}]")
    assert re.search(r"/evals/sets/\d+/$", page.url) and page.js_errors == []


def test_the_compare_page_shows_regressions_first_and_more_cases_below(live_server, page, settings, monkeypatch,
                                                                       demo_set):  # noqa: F811
    monkeypatch.setattr(selectors, "COMPARE_PAGE", 2)  # the live server runs in this process
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}  # results made here
    runs = [services.eval_run_create(eval_set=demo_set, app_name=AGENT, repeats=1,
                                     metrics=metrics.eval_metrics({"response_match_score": 0.8})) for _ in range(2)]
    cases = list(demo_set.cases.order_by("position"))
    for run, verdict in ((runs[0], lambda i: "passed"), (runs[1], lambda i: "failed" if i % 2 else "passed")):
        for i, case in enumerate(cases):
            EvalCaseResult.objects.create(run=run, case=case, eval_id=case.eval_id, repeat=0, position=case.position,
                                          status=verdict(i), metrics=[], case_data=case.data)
    page.goto(live_server.url + reverse("eval_app:run_compare") + f"?a={runs[0].pk}&b={runs[1].pk}")
    rows = page.locator("table.compare tbody tr[id^=cmp-]")
    expect(rows).to_have_count(2)
    regressed = len(cases) // 2
    expect(page.locator("#change-counts")).to_contain_text(f"{regressed} regressed")
    while page.locator("#compare-more").count():
        shown = rows.count()
        page.click("#compare-more a")
        expect(rows).to_have_count(min(shown + 2, len(cases)))
    changes = [c.removeprefix("change-") for c in rows.evaluate_all("rows => rows.map(r => r.className)")]
    assert changes == ["regressed"] * regressed + ["unchanged"] * (len(cases) - regressed)
    assert len(set(rows.evaluate_all("rows => rows.map(r => r.id)"))) == len(cases)
    assert reverse("eval_app:run_compare") in page.url and page.js_errors == []
