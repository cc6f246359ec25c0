"""Listed sessions are built straight into ADK's `Session` (no validation pass): they must be
the very objects pydantic's validation would give, and the installed ADK must take that path."""
from __future__ import annotations

import pickle

from google.adk.sessions import Session

from adk_compat import storage_marker
from sessions_app import selectors, session_service

ROWS = [
    selectors.ListedSession("s-1", "ann", 1_700_000_000.25, 3, {"topic": "x", "user:lang": "en", "n": [1, {"a": None}]}),
    selectors.ListedSession("ünï-☃", "bo b", 0.0, 0, {}),
    selectors.ListedSession("s-3", "", 1e300, 10**12, {"app:build": 1.5, "nested": {"deep": {"er": True}}}),
]


def test_the_installed_adk_takes_the_direct_path():
    assert session_service._BUILD_DIRECT


def test_built_sessions_equal_validated_ones_in_every_way_adk_reads_them():
    built = session_service._adk_sessions("app", ROWS)
    validated = session_service._validated_sessions("app", ROWS)
    assert built == validated
    for b, v in zip(built, validated):
        assert type(b) is Session
        assert b.model_dump() == v.model_dump() and b.model_dump_json(by_alias=True) == v.model_dump_json(by_alias=True)
        assert b.model_fields_set == v.model_fields_set and storage_marker(b) == storage_marker(v)
        assert pickle.loads(pickle.dumps(b)) == v and b.model_copy(deep=True) == v
    assert Session.model_validate(built[0].model_dump()).model_dump() == built[0].model_dump()


def test_built_sessions_share_nothing_mutable():
    first, second = session_service._adk_sessions("app", ROWS[:2])
    first.events.append("x")
    first.state["new"] = 1
    assert second.events == [] and "new" not in second.state
