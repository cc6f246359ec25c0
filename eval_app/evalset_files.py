"""Reading and writing ADK's eval set files; ADK's pydantic models are the schema.

Accepted: `.evalset.json` (ADK's `EvalSet`), the same shape in YAML, and ADK's
legacy formats: a `.test.json` list of turns (`query`, `expected_tool_use`,
`reference`) or a list of `{name, data, initial_session}` cases. A
`test_config.json` is ADK's `EvalConfig`: its criteria become ADK EvalMetrics
through `metrics.eval_metrics` (any metric ADK registers, with its options).
A file with any problem is refused whole, each problem named by its field path.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import yaml
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_config import EvalConfig, get_evaluation_criteria_or_default
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
from pydantic import ValidationError
from pydantic.alias_generators import to_snake

from access import limits

from . import metrics

MAX_PROBLEMS = 20
MAX_YAML_NODES = 200_000  # values after alias expansion: a large real eval set is ~50 000
MAX_FILE_BYTES = 20 * 1024 * 1024  # an uploaded file; a YAML file's aliases may not expand beyond it either
FORMAT_EVALSET, FORMAT_YAML, FORMAT_LEGACY = "evalset", "yaml", "legacy"


class EvalSetFileError(ValueError):
    """A file that cannot be imported; `problems` are "field.path: reason" lines."""

    def __init__(self, filename: str, problems: list[str]):
        self.filename = filename
        self.problems = problems[:MAX_PROBLEMS]
        more = len(problems) - len(self.problems)
        super().__init__(f"{filename}: " + "; ".join(self.problems) + (f" (and {more} more)" if more else ""))


@dataclass
class ParsedEvalSet:
    eval_set: AdkEvalSet
    format: str


# ---- reading ----------------------------------------------------------------


def parse_eval_set_file(*, filename: str, content: bytes | str) -> ParsedEvalSet:
    """An `EvalSet` from any supported file, or EvalSetFileError naming every problem."""
    is_yaml = filename.lower().endswith((".yaml", ".yml"))
    data = _load_yaml(filename, content) if is_yaml else _load_json(filename, content)
    if isinstance(data, list):
        return ParsedEvalSet(_from_legacy(filename, data), FORMAT_LEGACY)
    if not isinstance(data, dict):
        raise EvalSetFileError(filename, [f"(top level): expected an eval set object or a list, got {_kind(data)}"])
    try:
        eval_set = AdkEvalSet.model_validate(data)
    except ValidationError as exc:
        raise EvalSetFileError(filename, validation_problems(exc)) from exc
    _check_unique_ids(filename, eval_set)
    return ParsedEvalSet(eval_set, FORMAT_YAML if is_yaml else FORMAT_EVALSET)


def validation_problems(exc: ValidationError, prefix: str = "") -> list[str]:
    return [f"{_path(prefix, err['loc'])}: {err['msg']}" for err in exc.errors()]


def _path(prefix: str, loc: tuple[Any, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        # ADK's models name fields by camelCase alias in errors; files use snake_case.
        name = to_snake(part) if part[:1].islower() else part
        path += f".{name}" if path else name
    return path or "(top level)"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def _text(content: bytes | str) -> str:
    return content.decode("utf-8-sig") if isinstance(content, bytes) else content


def _load_json(filename: str, content: bytes | str) -> Any:
    try:
        return limits.loads(_text(content), "(file)")
    except UnicodeDecodeError as exc:
        raise EvalSetFileError(filename, [f"(file): not UTF-8 text ({exc.reason})"]) from exc
    except json.JSONDecodeError as exc:
        raise EvalSetFileError(filename, [f"line {exc.lineno} column {exc.colno}: {exc.msg}"]) from exc
    except limits.InputError as exc:
        raise EvalSetFileError(filename, [str(exc)]) from exc


def _load_yaml(filename: str, content: bytes | str) -> Any:
    try:
        text = _text(content)
        _check_yaml_size(filename, yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text)
        limits.check_json_value(data, "(file)")
        return data
    except UnicodeDecodeError as exc:
        raise EvalSetFileError(filename, [f"(file): not UTF-8 text ({exc.reason})"]) from exc
    except limits.InputError as exc:
        raise EvalSetFileError(filename, [str(exc)]) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "(file)"
        raise EvalSetFileError(filename, [f"{where}: {getattr(exc, 'problem', None) or exc}"]) from exc


def _check_yaml_size(filename: str, root: yaml.Node | None) -> None:
    """Refuse YAML whose aliases expand beyond MAX_YAML_NODES values or MAX_FILE_BYTES of
    text, before anything is built: a few hundred bytes of nested anchors (a "billion
    laughs") would otherwise expand to gigabytes, and a few anchors of long text repeated
    by aliases to more than any file may carry."""
    counts: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for node in _post_order(filename, root):
        children = node.value if isinstance(node, yaml.SequenceNode) else (
            [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
        counts[id(node)] = 1 + sum(counts[id(child)] for child in children)
        # About its JSON size: a scalar's text with quotes and a separator, a collection's brackets.
        own = len(node.value.encode("utf-8", "replace")) + 3 if isinstance(node, yaml.ScalarNode) else 2
        sizes[id(node)] = own + sum(sizes[id(child)] for child in children)
    total, size = (counts[id(root)], sizes[id(root)]) if root is not None else (0, 0)
    if total > MAX_YAML_NODES:
        raise EvalSetFileError(filename, [f"(file): its aliases expand to {total} values; at most {MAX_YAML_NODES} are taken."])
    if size > MAX_FILE_BYTES:
        raise EvalSetFileError(filename, [f"(file): its aliases expand to about {size} bytes; at most {MAX_FILE_BYTES} "
                                          "(the largest file taken) are."])


def _post_order(filename: str, root: yaml.Node | None) -> list[yaml.Node]:
    """Every distinct node once, children before parents (no recursion: depth is the attacker's)."""
    order: list[yaml.Node] = []
    done: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)] if root is not None else []
    on_path: set[int] = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            on_path.discard(id(node))
            done.add(id(node))
            order.append(node)
            continue
        if id(node) in done:
            continue
        if id(node) in on_path:
            raise EvalSetFileError(filename, ["(file): an alias refers to a node that contains it."])
        on_path.add(id(node))
        stack.append((node, True))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, False) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((child, False) for pair in node.value for child in pair)
    return order


def _check_unique_ids(filename: str, eval_set: AdkEvalSet) -> None:
    seen: set[str] = set()
    problems = []
    for index, case in enumerate(eval_set.eval_cases):
        if case.eval_id in seen:
            problems.append(f"eval_cases[{index}].eval_id: duplicate eval id {case.eval_id!r}")
        seen.add(case.eval_id)
    if problems:
        raise EvalSetFileError(filename, problems)


# ---- ADK's legacy formats ---------------------------------------------------


def eval_set_id_from_filename(filename: str) -> str:
    name = PurePath(filename).name
    for suffix in (".evalset.json", ".test.json", ".json", ".yaml", ".yml"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "eval_set"


def _from_legacy(filename: str, data: list[Any]) -> AdkEvalSet:
    """Convert with ADK's own converter, once the shape is checked (it would KeyError)."""
    eval_set_id = eval_set_id_from_filename(filename)
    if data and all(isinstance(item, dict) and "query" in item for item in data):
        # A .test.json: the whole file is one case, named after the file (as AgentEvaluator does).
        cases = [{"name": eval_set_id, "data": data}]
        problems = _turns_problems(data, "")
    else:
        cases = data
        problems = _cases_problems(data)
    if problems:
        raise EvalSetFileError(filename, problems)
    try:
        eval_set = convert_eval_set_to_pydantic_schema(eval_set_id=eval_set_id, eval_set_in_json_format=cases)
    except ValidationError as exc:
        raise EvalSetFileError(filename, validation_problems(exc)) from exc
    _check_unique_ids(filename, eval_set)
    return eval_set


def _cases_problems(data: list[Any]) -> list[str]:
    if not data:
        return ["(top level): an empty list has no cases"]
    problems = []
    for i, case in enumerate(data):
        where = f"[{i}]"
        if not isinstance(case, dict):
            problems.append(f"{where}: expected a case object with 'name' and 'data', got {_kind(case)}")
            continue
        if not isinstance(case.get("name"), str) or not case["name"]:
            problems.append(f"{where}.name: a non-empty string is required")
        if not isinstance(case.get("data"), list):
            problems.append(f"{where}.data: a list of turns is required")
        else:
            problems += _turns_problems(case["data"], f"{where}.data")
        session = case.get("initial_session", {})
        if not isinstance(session, dict) or not isinstance(session.get("state", {}), dict):
            problems.append(f"{where}.initial_session: expected an object with a 'state' object")
    return problems


def _turns_problems(turns: list[Any], prefix: str) -> list[str]:
    problems = []
    for i, turn in enumerate(turns):
        where = f"{prefix}[{i}]"
        if not isinstance(turn, dict):
            problems.append(f"{where}: expected a turn object, got {_kind(turn)}")
            continue
        if not isinstance(turn.get("query"), str):
            problems.append(f"{where}.query: a string is required")
        if not isinstance(turn.get("reference", ""), str):
            problems.append(f"{where}.reference: expected a string")
        problems += _tool_use_problems(turn.get("expected_tool_use", []), f"{where}.expected_tool_use")
        for j, response in enumerate(turn.get("expected_intermediate_agent_responses", [])):
            if not (isinstance(response, dict) and isinstance(response.get("author"), str)
                    and isinstance(response.get("text"), str)):
                problems.append(f"{where}.expected_intermediate_agent_responses[{j}]: needs 'author' and 'text' strings")
    return problems


def _tool_use_problems(uses: Any, where: str) -> list[str]:
    if not isinstance(uses, list):
        return [f"{where}: expected a list"]
    problems = []
    for j, use in enumerate(uses):
        if not isinstance(use, dict) or not isinstance(use.get("tool_name"), str):
            problems.append(f"{where}[{j}].tool_name: a string is required")
        elif not isinstance(use.get("tool_input", None), dict):
            problems.append(f"{where}[{j}].tool_input: an object is required")
    return problems


# ---- test_config.json -------------------------------------------------------


def parse_eval_config(*, content: bytes | str, filename: str = "test_config.json",
                      judge_model: str = "") -> tuple[EvalConfig, list[EvalMetric]]:
    """ADK's EvalConfig from a test_config.json and its EvalMetrics, the criteria checked by
    `metrics.eval_metrics` (every metric ADK registers, with its options); or EvalSetFileError
    naming each bad field."""
    data = _load_json(filename, content)
    try:
        config = EvalConfig.model_validate(data)
    except ValidationError as exc:
        raise EvalSetFileError(filename, validation_problems(exc)) from exc
    criteria = data.get("criteria") or {}  # as written: each metric's own criterion class reads it
    return config, criteria_metrics(criteria, filename=filename, judge_model=judge_model)


def parse_test_config(*, content: bytes | str, filename: str = "test_config.json",
                      judge_model: str = "") -> list[EvalMetric]:
    """The EvalMetrics of a test_config.json."""
    return parse_eval_config(content=content, filename=filename, judge_model=judge_model)[1]


def criteria_metrics(criteria: dict[str, Any], *, filename: str = "test_config.json",
                     judge_model: str = "") -> list[EvalMetric]:
    """EvalMetrics of test_config.json criteria (numbers or criterion objects) by `metrics.eval_metrics`."""
    try:
        return metrics.eval_metrics(criteria, judge_model=judge_model)
    except metrics.MetricConfigError as exc:
        raise EvalSetFileError(filename, [metric_problem(exc)]) from exc


def metric_problem(exc: metrics.MetricConfigError, prefix: str = "criteria") -> str:
    """`criteria.<field>: <message>`, however `metrics` names the field."""
    field = str(exc.field or "")
    if field and not field.startswith(prefix):
        field = f"{prefix}.{field}"
    message = str(exc)
    return message if field and message.startswith(field) else f"{field or prefix}: {message}"


def user_simulator_config_json(raw: Any) -> dict[str, Any] | None:
    """ADK's user_simulator_config (its `type` picks the class; none: ADK's llm_backed), checked by
    ADK's EvalConfig and given back as `simulator_config_json` stores it; EvalSetFileError naming
    the bad fields otherwise."""
    if raw is None:
        return None
    try:
        config = EvalConfig.model_validate({"user_simulator_config": raw})
    except ValidationError as exc:
        raise EvalSetFileError("user_simulator_config", validation_problems(exc)) from exc
    return simulator_config_json(config)


def simulator_config_json(config: EvalConfig) -> dict[str, Any] | None:
    """An EvalConfig's user_simulator_config as we store it: its type and the fields given
    (ADK fills in the rest when it reads it back); None when it has none."""
    simulator = config.user_simulator_config
    return simulator.model_dump(mode="json", exclude_unset=True) if simulator is not None else None


def default_eval_config() -> EvalConfig:
    """ADK's own default, as `adk eval` uses it without a test_config.json."""
    return get_evaluation_criteria_or_default(None)


def stored_eval_config(criteria: dict[str, Any], user_simulator_config: dict[str, Any] | None = None) -> EvalConfig:
    """The EvalConfig of criteria and a simulator config we stored ourselves (a set's);
    ADK's default criteria when none are stored."""
    config = EvalConfig.model_validate({"criteria": criteria}) if criteria else default_eval_config()
    if not user_simulator_config:
        return config
    simulator = EvalConfig.model_validate({"user_simulator_config": user_simulator_config}).user_simulator_config
    return config.model_copy(update={"user_simulator_config": simulator})


def stored_eval_metrics(criteria: dict[str, Any], *, judge_model: str = "") -> list[EvalMetric]:
    """The EvalMetrics of a set's stored criteria, else of ADK's default criteria."""
    return criteria_metrics(criteria or metrics.default_criteria(), filename="stored criteria", judge_model=judge_model)


# ---- writing ----------------------------------------------------------------


def build_eval_set(*, eval_set_id: str, name: str, description: str, creation_timestamp: float,
                   cases: list[dict[str, Any]]) -> AdkEvalSet:
    return AdkEvalSet(
        eval_set_id=eval_set_id,
        name=name or None,
        description=description or None,
        creation_timestamp=creation_timestamp,
        eval_cases=[AdkEvalCase.model_validate(case) for case in cases],
    )


def dump_eval_set_json(eval_set: AdkEvalSet) -> str:
    # The same options ADK's LocalEvalSetsManager writes .evalset.json files with.
    return eval_set.model_dump_json(indent=2, exclude_defaults=True, exclude_none=True)


def dump_eval_set_yaml(eval_set: AdkEvalSet) -> str:
    return yaml.safe_dump(json.loads(dump_eval_set_json(eval_set)), sort_keys=False, allow_unicode=True)


def dump_test_config(eval_metrics: list[EvalMetric], *, user_simulator_config: dict[str, Any] | None = None) -> str:
    """A test_config.json ADK reads back (`get_evaluation_criteria_or_default`)."""
    config: dict[str, Any] = {"criteria": metrics.criteria_of(eval_metrics)}
    if user_simulator_config:
        config["user_simulator_config"] = user_simulator_config
    return json.dumps(config, indent=2) + "\n"


def case_json(case: AdkEvalCase) -> dict[str, Any]:
    """How an ADK EvalCase is stored: its whole JSON form."""
    return case.model_dump(mode="json", exclude_none=True)
