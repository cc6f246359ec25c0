"""OTLP ingest throughput: spans per second through `POST /v1/traces`.

Each request is one export batch as ADK 2.13's exporter sends a turn of the
demo agent (a workflow, an agent run, two model calls with captured content and
a tool call: 5 spans, plus the web framework's span, which is not kept), each
turn in a new session adkui has never seen, so every batch also creates the
session and rebuilds its four events through the write path. Requests go
through Django's full stack in this process (test client, DEBUG=0), one after
another, so the figure is the server's cost per span, not the network's.

    DEBUG=0 python bench/otlp_bench.py [--batches 300]                 # SQLite (a fresh file)
    DEBUG=0 DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_otlp python bench/otlp_bench.py
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{folder}/otlp.sqlite3")
    os.environ.setdefault("SECRET_KEY", "otlp-bench")
    os.environ.setdefault("ADKUI_LOCAL_DEV", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from inspector_app.models import TraceSpan
    from sessions_app.models import Event, Session
    from tests.inspector_app.test_otlp import adk_spans, body

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    client = Client()
    bodies = []
    for n in range(args.batches):
        spans = adk_spans()
        for span in spans:
            span.trace_id = n.to_bytes(16, "big")
            for attribute in span.attributes:
                if attribute.key == "gen_ai.conversation.id":
                    attribute.value.string_value = f"bench-{n}"
        bodies.append(body(spans, service="bench").SerializeToString())
    start, cpu = time.perf_counter(), time.process_time()
    for data in bodies:
        answer = client.post("/v1/traces", data=data, content_type="application/x-protobuf", secure=True)
        assert answer.status_code == 200, answer.content
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    spans = TraceSpan.objects.count()
    engine = django.conf.settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"OTLP ingest ({engine}, DEBUG={int(django.conf.settings.DEBUG)}): {args.batches} batches, {spans} ADK spans, "
          f"{Session.objects.count()} sessions and {Event.objects.count()} events rebuilt")
    print(f"  {spans / elapsed:8.0f} spans/s   {args.batches / elapsed:6.1f} batches/s   "
          f"{elapsed / args.batches * 1000:6.1f} ms and {cpu / args.batches * 1000:6.1f} ms CPU per batch")


if __name__ == "__main__":
    main()
