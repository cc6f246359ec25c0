from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import apis
from .apis.run_control import EvalRunCancelApi, EvalRunResumeApi

app_name = "eval_api"
# ADK's dev server paths, hyphenated ones and the older underscored aliases adk-web still calls.
_APP = "dev/apps/<str:app_name>"
_SET = _APP + "/eval-sets/<str:eval_set_id>"
_LEGACY_SET = _APP + "/eval_sets/<str:eval_set_id>"

urlpatterns: list[URLPattern | URLResolver] = [
    path("evals/sets", apis.EvalSetListApi.as_view(), name="eval-sets"),
    path("evals/sets/<int:pk>/runs", apis.EvalRunCreateApi.as_view(), name="eval-run-create"),
    path("evals/runs/<int:pk>", apis.EvalRunDetailApi.as_view(), name="eval-run"),
    path("evals/runs/<int:pk>/cancel", EvalRunCancelApi.as_view(), name="eval-run-cancel"),
    path("evals/runs/<int:pk>/resume", EvalRunResumeApi.as_view(), name="eval-run-resume"),
    # ADK's eval routes (adk-web's Eval tab):
    path(_APP + "/eval-sets", apis.AdkEvalSetListApi.as_view(), name="adk-eval-sets"),
    path(_APP + "/eval_sets", apis.AdkEvalSetIdsLegacyApi.as_view(), name="adk-eval-sets-legacy"),
    path(_SET, apis.AdkEvalSetApi.as_view(), name="adk-eval-set"),
    path(_LEGACY_SET, apis.AdkEvalSetCreateLegacyApi.as_view(), name="adk-eval-set-legacy"),
    path(_LEGACY_SET + "/evals", apis.AdkEvalCaseIdsApi.as_view(), name="adk-eval-cases"),
    path(_SET + "/eval-cases/<str:eval_case_id>", apis.AdkEvalCaseApi.as_view(), name="adk-eval-case"),
    path(_LEGACY_SET + "/evals/<str:eval_case_id>", apis.AdkEvalCaseLegacyApi.as_view(), name="adk-eval-case-legacy"),
    path(_SET + "/add-session", apis.AdkAddSessionApi.as_view(), name="adk-eval-add-session"),
    path(_LEGACY_SET + "/add_session", apis.AdkAddSessionLegacyApi.as_view(), name="adk-eval-add-session-legacy"),
    path(_SET + "/run", apis.AdkEvalRunApi.as_view(), name="adk-eval-run"),
    path(_LEGACY_SET + "/run_eval", apis.AdkEvalRunLegacyApi.as_view(), name="adk-eval-run-legacy"),
    path(_APP + "/eval-results", apis.AdkEvalResultIdsApi.as_view(), name="adk-eval-results"),
    path(_APP + "/eval_results", apis.AdkEvalResultIdsLegacyApi.as_view(), name="adk-eval-results-legacy"),
    path(_APP + "/eval-results/<str:eval_result_id>", apis.AdkEvalResultApi.as_view(), name="adk-eval-result"),
    path(_APP + "/eval_results/<str:eval_result_id>", apis.AdkEvalResultLegacyApi.as_view(),
         name="adk-eval-result-legacy"),
    path(_APP + "/metrics-info", apis.AdkMetricsInfoApi.as_view(), name="adk-metrics-info"),
]
