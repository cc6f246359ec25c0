"""The server's import-time objects are kept out of the collector's full walks."""
from __future__ import annotations

import gc

from adkui import asgi  # what uvicorn imports: importing it freezes


def test_the_asgi_application_freezes_what_it_imported():
    assert asgi.application is not None
    # Django, ADK and the apps: a full collection walked all of these,
    # pausing every request in flight (bench/http_bench.py's p99).
    assert gc.get_freeze_count() > 100_000
