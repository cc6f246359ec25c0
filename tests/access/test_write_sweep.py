"""Every form field of every page's write, given hostile values: never a 5xx, and a refusal
changes no row.

The writes are the role table's probes (test_roles.PROBES), each on the world's real rows.
Which fields a write reads is recorded, not listed: each probe is posted once as it is, while
every read of a QueryDict is noted, then each noted field is posted again with each hostile
value (the probe's other fields as before), and every row of the ADK data apps is compared
before and after each 4xx. The test's transaction is never committed, so nothing a write
schedules on commit (an eval run, a broadcast) runs. Writes that start an agent run at once
(chat, replay, an edited call's continuation) and deletes (no fields, and they would take the
world with them) are left to their own tests.
"""
from __future__ import annotations

from typing import Any

import pytest

from .conftest import World, snapshot
from .test_roles import PROBES

HOSTILE_VALUES = ("", "1e400", "99999999999999999999999", '{"a":', "x'\"<>☃" * 60)
STARTS_A_RUN = {"runtime:chat_send", "runtime:replay_start", "runtime:edit_submit"}
SWEPT = sorted(
    key for (key, method), probe in PROBES.items()
    if method == "POST" and not probe.api and key not in STARTS_A_RUN and not key.endswith("delete")
)
# The role table's run probe only has to reach the view; here the run form must pass, so that
# each hostile field is the one thing wrong with it.
VALID = {"eval_app:run_create": {"tool_trajectory_avg_score__on": "on", "tool_trajectory_avg_score__threshold": "1"}}


@pytest.mark.parametrize("key", SWEPT)
def test_no_field_a_write_reads_breaks_it_or_half_writes(production, client_as, world: World, query_reads: set[str],
                                                         key: str) -> None:
    client, probe = client_as("superuser"), PROBES[(key, "POST")]

    def probe_data() -> dict[str, Any]:
        # Built again for each post: an upload in it is read to its end by the post that sends it.
        return probe.build(world, False)[1] | VALID.get(key, {})

    url, data = probe.build(world, False)[0], probe_data()
    query_reads.clear()
    first = client.post(url, data, headers={"HX-Request": "true"})
    assert first.status_code < 500, (url, first.status_code, first.content[:300])
    fields = sorted(query_reads - {"csrfmiddlewaretoken"})
    before = snapshot()
    for field in fields:
        for value in HOSTILE_VALUES:
            response = client.post(url, {**probe_data(), field: value}, headers={"HX-Request": "true"})
            assert response.status_code < 500, (url, field, value[:20], response.content[:300])
            after = snapshot()
            if 400 <= response.status_code < 500:
                assert after == before, f"a refused {field}={value[:20]!r} to {url} changed rows"
            before = after
    # The recording works: a write's own fields were read.
    assert set(data) - {"file"} <= set(fields), (data, fields)
