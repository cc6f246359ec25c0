"""ADK's private names adkui relies on are still where adk_compat finds them."""
from __future__ import annotations

import ast
from pathlib import Path

from google.adk.sessions import Session

import adk_compat

ROOT = Path(__file__).resolve().parents[2]


def test_every_private_name_is_there() -> None:
    for name in adk_compat.__all__:
        assert getattr(adk_compat, name) is not None, name


def test_the_storage_marker_round_trips() -> None:
    session = Session(id="s", app_name="a", user_id="u")
    adk_compat.set_storage_marker(session, "7")
    assert adk_compat.storage_marker(session) == "7"


def test_no_module_but_adk_compat_imports_a_private_adk_name() -> None:
    offenders = []
    for path in ROOT.glob("*/**/*.py"):
        if path.parts[len(ROOT.parts)] in (".venv", "tests", "bench") or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("google.adk"):
                private = [p for p in node.module.split(".") if p.startswith("_")]
                private += [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offenders.append(f"{path.relative_to(ROOT)}: {node.module} {private}")
    assert offenders == []
