"""The eval pages' long lists come a keyset page at a time: the set list, a set's cases and run
history, a run's results. Each page costs the same number of queries with 5 rows as with 50,
and walking the "more" links shows every row once, in order."""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from eval_app import broadcast, selectors
from eval_app.models import EvalCase, EvalCaseResult, EvalRun, EvalSet

pytestmark = pytest.mark.django_db
MORE = re.compile(r'hx-get="([^"]*(?:after|cases_after|runs_after)=[^"]+)"')


def add_sets(first: int, count: int) -> None:
    # Two agents, so the order's first column has ties the second must break.
    EvalSet.objects.bulk_create(EvalSet(app_name=f"agent_{i % 2}", eval_set_id=f"set_{i:03}")
                                for i in range(first, first + count))
    for eval_set in EvalSet.objects.filter(cases__isnull=True):
        EvalRun.objects.create(eval_set=eval_set, app_name=eval_set.app_name, status="completed", total=1, done=1)
        EvalCase.objects.create(eval_set=eval_set, eval_id="c", data={"eval_id": "c"})


def add_cases(eval_set: EvalSet, first: int, count: int) -> None:
    # Equal positions (as cases added one by one may have): the pk breaks the tie.
    EvalCase.objects.bulk_create(EvalCase(eval_set=eval_set, eval_id=f"case_{i:03}", position=i // 3,
                                          data={"eval_id": f"case_{i:03}"}) for i in range(first, first + count))


def add_runs(eval_set: EvalSet, count: int) -> None:
    for _ in range(count):
        run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed", total=1, done=1,
                                     metrics=[{"metric_name": "response_match_score", "threshold": 0.8}])
        EvalCaseResult.objects.create(run=run, eval_id="c", status="passed", case_data={},
                                      metrics=[{"metric_name": "response_match_score", "score": 0.9}])


def add_results(run: EvalRun, first: int, count: int) -> None:
    EvalCaseResult.objects.bulk_create(
        EvalCaseResult(run=run, eval_id=f"case_{i:03}", position=i, status="passed", case_data={},
                       metrics=[{"metric_name": "response_match_score", "score": 1.0}])
        for i in range(first, first + count)
    )


def queries(client, url: str, **headers: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, **headers)
    assert response.status_code == 200, response.content[:500]
    return len(ctx), response.content.decode()


def walk(client, url: str, row: re.Pattern[str]) -> list[str]:
    """Every row id on the page and on each page its "more" link loads (as htmx does)."""
    html = client.get(url).content.decode()
    seen = row.findall(html)
    while link := MORE.search(html):
        html = client.get(link.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
        seen += row.findall(html)
    return seen


@pytest.fixture
def eval_set() -> EvalSet:
    return EvalSet.objects.create(app_name="agent", eval_set_id="big")


def test_the_set_list_costs_the_same_with_5_sets_as_with_50(client):
    add_sets(0, 5)
    client.get("/evals/")  # the process's first look (agents load once)
    few, html = queries(client, "/evals/")
    assert html.count('<td><a href="/evals/sets/') == 5 and 'id="sets-more"' not in html
    add_sets(5, 45)
    many, html = queries(client, "/evals/")
    assert html.count('<td><a href="/evals/sets/') == min(50, selectors.EVAL_SETS_PAGE)
    assert few == many


def test_the_set_list_pages_through_every_set_once_in_order(client, monkeypatch):
    monkeypatch.setattr(selectors, "EVAL_SETS_PAGE", 4)
    add_sets(0, 11)
    seen = walk(client, "/evals/", re.compile(r'<td><a href="/evals/sets/(\d+)/">'))
    expected = [str(pk) for pk in EvalSet.objects.order_by("app_name", "eval_set_id").values_list("pk", flat=True)]
    assert seen == expected


def test_a_sets_page_costs_the_same_with_5_cases_and_runs_as_with_50(client, eval_set):
    add_cases(eval_set, 0, 5)
    add_runs(eval_set, 5)
    url = f"/evals/sets/{eval_set.pk}/"
    client.get(url)
    few, html = queries(client, url)
    assert html.count('<tr id="case-') == 5 and 'id="cases-more"' not in html and 'id="runs-more"' not in html
    add_cases(eval_set, 5, 45)
    add_runs(eval_set, 45)
    many, html = queries(client, url)
    assert html.count('<tr id="case-') == min(50, selectors.CASES_PAGE)
    assert 'id="runs-more"' in html  # 50 runs: more than a page of history
    assert few == many
    assert '<span class="muted small" id="case-count">50</span>' in html


def test_a_sets_cases_and_runs_page_through_each_row_once_in_order(client, eval_set, monkeypatch):
    monkeypatch.setattr(selectors, "CASES_PAGE", 4)
    monkeypatch.setattr(selectors, "HISTORY_PAGE", 3)
    add_cases(eval_set, 0, 10)
    add_runs(eval_set, 8)
    url = f"/evals/sets/{eval_set.pk}/"
    cases = walk(client, url, re.compile(r'<tr id="case-(\d+)">'))
    assert cases == [str(pk) for pk in eval_set.cases.order_by("position", "pk").values_list("pk", flat=True)]
    html = client.get(url).content.decode()
    link = re.search(r'hx-get="([^"]*runs_after=[^"]+)"', html).group(1)
    older = client.get(link, HTTP_HX_REQUEST="true").content.decode()
    runs = re.compile(r'<td><a href="/evals/runs/(\d+)/">')
    newest_first = [str(pk) for pk in eval_set.runs.order_by("-pk").values_list("pk", flat=True)]
    assert runs.findall(html) == newest_first[:3] and runs.findall(older) == newest_first[3:6]
    assert "<h1>" not in older  # rows only, for htmx to put in place of the button


def test_a_run_page_costs_the_same_with_5_results_as_with_50(client, eval_set):
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed")
    add_results(run, 0, 5)
    url = f"/evals/runs/{run.pk}/"
    client.get(url)
    few, html = queries(client, url)
    assert html.count('<tr id="result-') == 5
    add_results(run, 5, 45)
    many, html = queries(client, url)
    assert html.count('<tr id="result-') == min(50, selectors.RESULTS_PAGE)
    assert few == many


def test_a_runs_results_page_newest_first_and_the_live_snapshot_is_the_first_page(client, eval_set, monkeypatch):
    monkeypatch.setattr(selectors, "RESULTS_PAGE", 4)
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed")
    add_results(run, 0, 10)
    row = re.compile(r'<tr id="result-(\d+)"')
    seen = walk(client, f"/evals/runs/{run.pk}/", row)
    assert seen == [str(pk) for pk in run.results.order_by("-pk").values_list("pk", flat=True)]
    frames, sent = broadcast.snapshot(run.pk)
    assert row.findall(frames[0]) == seen[:4] and sent == {int(pk) for pk in seen[:4]}
    assert 'id="results-older"' in frames[0]  # the rest, with the button, as on the page


@pytest.mark.parametrize("url", ["/evals/?after=bm90IGEgdG9rZW4", "/evals/sets/{pk}/?cases_after=WyJ4Il0=",
                                 "/evals/sets/{pk}/?runs_after=%%%", "/evals/runs/{run}/?after=WzEsMl0="])
def test_a_position_no_page_wrote_is_a_400_naming_the_parameter(client, eval_set, url):
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent")
    response = client.get(url.format(pk=eval_set.pk, run=run.pk))
    assert response.status_code == 400
    assert url.split("?")[1].split("=")[0] in response.content.decode()


def api_walk(client, url: str, size: int, rows: Callable[[dict | list], list]) -> list:
    """Every row of every page of an API list paged by `size`, following X-Next-Page-Token."""
    seen, token = [], None
    while True:
        response = client.get(url, {"page_size": size, **({"page_token": token} if token else {})})
        assert response.status_code == 200, response.content[:300]
        seen += rows(response.json())
        token = response.headers.get("X-Next-Page-Token")
        if not token:
            return seen


def test_the_eval_set_api_pages_by_page_size_and_costs_the_same_with_5_sets_as_with_50(client):
    add_sets(0, 5)
    few, _ = queries(client, "/api/evals/sets?page_size=20")
    add_sets(5, 45)
    many, _ = queries(client, "/api/evals/sets?page_size=20")
    assert few == many
    ids = api_walk(client, "/api/evals/sets", 7, lambda body: [s["id"] for s in body])
    assert ids == list(EvalSet.objects.order_by("app_name", "eval_set_id").values_list("pk", flat=True))
    assert len(client.get("/api/evals/sets").json()) == 50  # without page_size: the whole list, as before


def test_the_run_api_pages_its_results_in_case_order(client, eval_set):
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed")
    add_results(run, 0, 5)
    url = f"/api/evals/runs/{run.pk}"
    few, _ = queries(client, url + "?page_size=20")
    add_results(run, 5, 45)
    many, _ = queries(client, url + "?page_size=20")
    assert few == many
    walked = api_walk(client, url, 8, lambda body: [r["eval_id"] for r in body["results"]])
    assert walked == [f"case_{i:03}" for i in range(50)]
    assert [r["eval_id"] for r in client.get(url).json()["results"]] == walked


@pytest.mark.parametrize(("query", "field"), [
    ({"page_token": "WyJ4Il0="}, "page_token"), ({"page_size": 5, "page_token": "nope"}, "page_token"),
    ({"page_size": 0}, "page_size"), ({"page_size": 5, "page_token": "WyJ4Il0="}, "page_token"),
])
def test_the_eval_apis_refuse_a_page_they_did_not_write_naming_the_field(client, eval_set, query, field):
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent")
    for url in ("/api/evals/sets", f"/api/evals/runs/{run.pk}"):
        response = client.get(url, query)
        assert response.status_code == 400 and field in response.json(), response.content


def add_repeats(run: EvalRun, first: int, count: int) -> None:
    EvalCaseResult.objects.bulk_create(
        EvalCaseResult(run=run, eval_id=f"case_{i:03}", position=i, repeat=r, status="passed" if r else "failed",
                       case_data={}, metrics=[{"metric_name": "response_match_score", "score": r / 2}])
        for i in range(first, first + count) for r in range(run.repeats)
    )


def test_a_repeated_runs_judge_lab_pages_by_case_at_a_fixed_cost(client, eval_set, monkeypatch):
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed", repeats=3)
    add_repeats(run, 0, 5)
    url = f"/evals/runs/{run.pk}/"
    client.get(url)
    few, html = queries(client, url)
    assert html.count('<tr data-case="') == 5
    add_repeats(run, 5, 45)
    many, html = queries(client, url)
    assert few == many and html.count('<tr data-case="') == min(50, selectors.LAB_PAGE)

    monkeypatch.setattr(selectors, "LAB_PAGE", 7)
    monkeypatch.setattr(selectors, "RESULTS_PAGE", 1000)  # the results' own button out of the way
    html = client.get(url).content.decode()
    cases = re.compile(r'<tr data-case="([^"]+)">')
    seen = cases.findall(html)
    while link := re.search(r'hx-get="([^"]*lab_after=[^"]+)"', html):
        html = client.get(link.group(1), HTTP_HX_REQUEST="true").content.decode()
        seen += cases.findall(html)
    assert seen == [f"case_{i:03}" for i in range(50)]
    # Each case failed once and passed twice: flaky, whichever page it is on.
    assert html.count('class="badge flaky"') == len(cases.findall(html)) > 0
    assert client.get(url, {"lab_after": "WyJ4Il0="}).status_code == 400


@pytest.mark.parametrize(("query", "field"), [({"page_token": ""}, "page_token"), ({"page_size": ""}, "page_size")])
def test_a_blank_page_parameter_is_refused_not_ignored(client, query, field):
    response = client.get("/api/evals/sets", query)
    assert response.status_code == 400 and field in response.json()
