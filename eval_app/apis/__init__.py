"""The eval app's REST API.

`runs`: ours, for scripts and CI (list sets, start a run, read its progress and
results). `adk`: ADK's own eval routes, as `adk web`'s dev server serves them,
which adk-web's Eval tab calls; `adk_results` turns our runs into ADK's results.
"""
from __future__ import annotations

from .adk import (
    AdkAddSessionApi,
    AdkAddSessionLegacyApi,
    AdkEvalCaseApi,
    AdkEvalCaseIdsApi,
    AdkEvalCaseLegacyApi,
    AdkEvalResultApi,
    AdkEvalResultIdsApi,
    AdkEvalResultIdsLegacyApi,
    AdkEvalResultLegacyApi,
    AdkEvalRunApi,
    AdkEvalRunLegacyApi,
    AdkEvalSetApi,
    AdkEvalSetCreateLegacyApi,
    AdkEvalSetIdsLegacyApi,
    AdkEvalSetListApi,
    AdkMetricsInfoApi,
)
from .runs import EvalRunCreateApi, EvalRunDetailApi, EvalSetListApi, RunOutputSerializer

__all__ = [
    "AdkAddSessionApi", "AdkAddSessionLegacyApi", "AdkEvalCaseApi", "AdkEvalCaseIdsApi", "AdkEvalCaseLegacyApi",
    "AdkEvalResultApi", "AdkEvalResultIdsApi", "AdkEvalResultIdsLegacyApi", "AdkEvalResultLegacyApi",
    "AdkEvalRunApi", "AdkEvalRunLegacyApi", "AdkEvalSetApi", "AdkEvalSetCreateLegacyApi", "AdkEvalSetIdsLegacyApi",
    "AdkEvalSetListApi", "AdkMetricsInfoApi", "EvalRunCreateApi", "EvalRunDetailApi", "EvalSetListApi",
    "RunOutputSerializer",
]
