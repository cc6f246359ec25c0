"""Eval pages at scale (#27): one eval set of --cases cases and --runs runs, one run of
--cases cases x 2 repeats. Prints the server time (Django test Client, DEBUG=0, a logged-in editor;
median of --repeat, wall ms with process CPU ms in brackets) and the query count of the set
page, the run page, and the page each of their "more" links loads (cases, runs, results,
judge lab), beside the same pages of a set and run of 5 cases.

    python bench/eval_paging_bench.py [--cases 10000] [--runs 2000] [--repeat 9]

Runs on a fresh SQLite file, or DATABASE_URL (a database the bench may fill).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{Path(tempfile.mkdtemp(prefix='adkui-paging-')) / 'db.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ["DEBUG"] = "0"  # DEBUG records every query: not what a deployment runs
os.environ["ADKUI_LOCAL_DEV"] = "0"
os.environ.setdefault("DB_POOL", "0")  # the test Client and the bench share this thread's connection

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from eval_app import scores  # noqa: E402
from eval_app.models import EvalCase, EvalCaseResult, EvalRun, EvalSet  # noqa: E402

MORE = ("cases_after", "runs_after", "after", "lab_after")


def fill(name: str, cases: int, runs: int) -> tuple[EvalSet, EvalRun]:
    eval_set = EvalSet.objects.create(app_name="agent", eval_set_id=name)
    EvalCase.objects.bulk_create(EvalCase(eval_set=eval_set, eval_id=f"c{i}", position=i, data={"eval_id": f"c{i}"})
                                 for i in range(cases))
    # Ended runs, as the engine leaves them: with their mean score per metric stored (none for these).
    EvalRun.objects.bulk_create(EvalRun(eval_set=eval_set, app_name="agent", status="completed", metric_means={})
                                for _ in range(runs))
    run = EvalRun.objects.create(eval_set=eval_set, app_name="agent", status="completed", repeats=2)
    EvalCaseResult.objects.bulk_create(
        EvalCaseResult(run=run, eval_id=f"c{i}", position=i, repeat=r, status="passed", case_data={},
                       metrics=[{"metric_name": "response_match_score", "score": 1.0}])
        for i in range(cases) for r in range(2)
    )
    EvalRun.objects.filter(pk=run.pk).update(metric_means=scores.metric_means([run.pk]).get(run.pk, {}))
    return eval_set, run


def timed(client: Client, url: str, repeat: int, **headers: str) -> tuple[str, str]:
    client.get(url, secure=True, **headers)
    samples = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        response = client.get(url, secure=True, **headers)
        samples.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
        if response.status_code != 200:
            sys.exit(f"{url}: {response.status_code}")
    with CaptureQueriesContext(connection) as queries:
        client.get(url, secure=True, **headers)
    wall = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    return f"{wall:.1f} ({cpu:.1f}) ms, {len(queries)} queries", response.content.decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves hashed files
    user, _ = User.objects.get_or_create(username="paging-bench")
    call_command("grant_role", "paging-bench", "editor", stdout=open(os.devnull, "w"))
    client = Client()
    client.force_login(user)
    for label, (eval_set, run) in (("5 cases", fill("small", 5, 5)),
                                   (f"{args.cases} cases, {args.runs} runs", fill("big", args.cases, args.runs))):
        print(label)
        for page, url in (("set page", f"/evals/sets/{eval_set.pk}/"), ("run page", f"/evals/runs/{run.pk}/")):
            figures, html = timed(client, url, args.repeat)
            print(f"  {page}: {figures}")
            for param in MORE:
                if link := re.search(rf'hx-get="([^"]*[?&]{param}=[^"]+)"', html):
                    figures, _ = timed(client, link.group(1), args.repeat, HTTP_HX_REQUEST="true")
                    print(f"    its next page ({param}): {figures}")


if __name__ == "__main__":
    main()
