"""ADK's private names that adkui needs, gathered in one place.

Every other module imports ADK only through its public names. Each import
here says why no public name serves; when ADK makes one public (or moves
it), this file is the only one to change. `tests/test_adk_compat.py` fails
if an ADK upgrade removes one of them.
"""
from __future__ import annotations

from typing import Any

# ADK's api server sends sessions and events without its internal metadata
# keys (`public_*`) and marks events a client hands back as restored
# (`mark_restored`) so ADK's flows treat them as history; no public API
# strips or marks them, and our server must send what ADK's sends.
from google.adk.events._internal_metadata import mark_restored, public_event, public_session

# The same server strips credential secrets from every payload it sends.
from google.adk.auth.auth_credential import _redact_credential_secrets as redact_credential_secrets

# The function-call names ADK reserves for its client round-trips
# (confirmation, credential requests); the api server refuses them in
# client-sent history, and so do we.
from google.adk.utils._function_call_names import CLIENT_FUNCTION_CALL_NAMES

# The state delta `Runner.rewind_async` would append, for the rewind preview:
# ADK's own rule, so the preview never disagrees with the rewind.
from google.adk.sessions._rewind_utils import compute_state_delta_for_rewind

# What the model sees of a session's events (compaction summaries in place
# of compacted events), for the conversation view: ADK's flow does this
# inside a private step with no public entry point.
from google.adk.flows.llm_flows.contents import _get_contents as model_contents

# How ADK finds `{state_key}` placeholders in an instruction, for the
# inspector's highlighting: the pattern and its name rule are private.
from google.adk.flows.llm_flows.prompt._instructions_utils import _TEMPLATE_VAR_PATTERN as TEMPLATE_VAR_PATTERN
from google.adk.flows.llm_flows.prompt._instructions_utils import _is_valid_state_name as is_valid_state_name

# An `EvalSetResult` named and stamped as `adk eval` names the results it
# stores under .adk/eval_history (`--results-json`, the eval-result routes):
# ADK builds it in a private helper of its results managers.
from google.adk.evaluation._eval_set_results_manager_utils import create_eval_set_result

# google-genai's enums (finish reasons, media processing, ...) keep a value they do
# not know instead of refusing it, so ADK's models do too; the API's schema must say
# so, and the only mark of such an enum is its private base class.
from google.genai._common import CaseInSensitiveEnum as OpenEnum

# The `gen_ai.provider.name` ADK's spans give a model (gcp.gemini, gcp.vertex_ai, a LiteLLM
# prefix, ...): its rule, read from the model name and the deployment, has no public entry.
from google.adk.telemetry.tracing import _resolve_gen_ai_provider_name as gen_ai_provider_name

__all__ = [
    "CLIENT_FUNCTION_CALL_NAMES",
    "gen_ai_provider_name",
    "OpenEnum",
    "TEMPLATE_VAR_PATTERN",
    "compute_state_delta_for_rewind",
    "create_eval_set_result",
    "is_valid_state_name",
    "mark_restored",
    "model_contents",
    "public_event",
    "public_session",
    "redact_credential_secrets",
    "storage_marker",
    "set_storage_marker",
]


# A session service tells a stale writer apart by a marker ADK keeps on the
# `Session` it returned (ADK's SQL services set it the same way); the
# attribute is private and has no accessor.
def storage_marker(session: Any) -> str | None:
    return session._storage_update_marker


def set_storage_marker(session: Any, marker: str) -> None:
    # Straight into pydantic's documented store of private values: its
    # `__setattr__` costs a whole app's list about 4 µs a session.
    session.__pydantic_private__["_storage_update_marker"] = marker
