"""The house: each app imports only the apps below it, with no circle and no import inside a function."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Top to bottom. `adkui` is configuration; `adk_compat` holds ADK's private names; `lazy_imports`
# what is imported on first use rather than at start-up; `plain_sql` model instances from plain statements.
LAYERS = ["adkui", "runtime_app", "eval_app", "inspector_app", "memory_app", "sessions_app", "access", "adk_compat",
          "lazy_imports", "plain_sql"]
# Apps on one level may not import each other either.
LEVEL = {"adkui": 0, "runtime_app": 1, "eval_app": 2, "inspector_app": 2, "memory_app": 2,
         "sessions_app": 3, "access": 4, "adk_compat": 4, "lazy_imports": 4, "plain_sql": 5}


def _modules() -> dict[str, Path]:
    found = {}
    for top in LAYERS:
        paths = [ROOT / f"{top}.py"] if (ROOT / f"{top}.py").exists() else sorted((ROOT / top).rglob("*.py"))
        for path in paths:
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def _imports(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported project module, whether the import sits inside a function)."""
    tree = ast.parse(path.read_text())
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if n is not f}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            targets = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in LEVEL:
                found.append((target, id(node) in inside))
    return found


def test_apps_import_only_the_apps_below_them() -> None:
    upward = []
    for name, path in _modules().items():
        here = name.split(".")[0]
        for target, _ in _imports(name, path):
            there = target.split(".")[0]
            if there != here and LEVEL[there] <= LEVEL[here]:
                upward.append(f"{name} imports {target}")
    assert upward == []


def test_no_project_import_hides_inside_a_function() -> None:
    modules = _modules()
    lazy = [f"{name} imports {target}" for name, path in modules.items()
            for target, in_function in _imports(name, path) if in_function]
    assert lazy == []


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {name: {t for t, _ in _imports(name, path) if t in modules and t != name} for name, path in modules.items()}
    # A package's __init__ importing its own modules is no circle of ours: drop parent->child edges.
    graph = {n: {t for t in ts if not t.startswith(n + ".")} for n, ts in graph.items()}
    state: dict[str, int] = {}
    circles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []
