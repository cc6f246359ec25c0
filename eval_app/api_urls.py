from __future__ import annotations

from django.urls import URLPattern, URLResolver

from lazy_imports import lazy_path, views_in

# Named, imported on first use: see lazy_imports.py.
apis = views_in("eval_app.apis")
run_control = views_in("eval_app.apis.run_control")

app_name = "eval_api"
# ADK's dev server paths, hyphenated ones and the older underscored aliases adk-web still calls.
_APP = "dev/apps/<str:app_name>"
_SET = _APP + "/eval-sets/<str:eval_set_id>"
_LEGACY_SET = _APP + "/eval_sets/<str:eval_set_id>"

urlpatterns: list[URLPattern | URLResolver] = [
    lazy_path("evals/sets", apis.EvalSetListApi.as_view(), name="eval-sets"),
    lazy_path("evals/sets/<int:pk>/runs", apis.EvalRunCreateApi.as_view(), name="eval-run-create"),
    lazy_path("evals/runs/<int:pk>", apis.EvalRunDetailApi.as_view(), name="eval-run"),
    lazy_path("evals/runs/<int:pk>/cancel", run_control.EvalRunCancelApi.as_view(), name="eval-run-cancel"),
    lazy_path("evals/runs/<int:pk>/resume", run_control.EvalRunResumeApi.as_view(), name="eval-run-resume"),
    # ADK's eval routes (adk-web's Eval tab):
    lazy_path(_APP + "/eval-sets", apis.AdkEvalSetListApi.as_view(), name="adk-eval-sets"),
    lazy_path(_APP + "/eval_sets", apis.AdkEvalSetIdsLegacyApi.as_view(), name="adk-eval-sets-legacy"),
    lazy_path(_SET, apis.AdkEvalSetApi.as_view(), name="adk-eval-set"),
    lazy_path(_LEGACY_SET, apis.AdkEvalSetCreateLegacyApi.as_view(), name="adk-eval-set-legacy"),
    lazy_path(_LEGACY_SET + "/evals", apis.AdkEvalCaseIdsApi.as_view(), name="adk-eval-cases"),
    lazy_path(_SET + "/eval-cases/<str:eval_case_id>", apis.AdkEvalCaseApi.as_view(), name="adk-eval-case"),
    lazy_path(_LEGACY_SET + "/evals/<str:eval_case_id>", apis.AdkEvalCaseLegacyApi.as_view(),
              name="adk-eval-case-legacy"),
    lazy_path(_SET + "/add-session", apis.AdkAddSessionApi.as_view(), name="adk-eval-add-session"),
    lazy_path(_LEGACY_SET + "/add_session", apis.AdkAddSessionLegacyApi.as_view(),
              name="adk-eval-add-session-legacy"),
    lazy_path(_SET + "/run", apis.AdkEvalRunApi.as_view(), name="adk-eval-run"),
    lazy_path(_LEGACY_SET + "/run_eval", apis.AdkEvalRunLegacyApi.as_view(), name="adk-eval-run-legacy"),
    lazy_path(_APP + "/eval-results", apis.AdkEvalResultIdsApi.as_view(), name="adk-eval-results"),
    lazy_path(_APP + "/eval_results", apis.AdkEvalResultIdsLegacyApi.as_view(), name="adk-eval-results-legacy"),
    lazy_path(_APP + "/eval-results/<str:eval_result_id>", apis.AdkEvalResultApi.as_view(), name="adk-eval-result"),
    lazy_path(_APP + "/eval_results/<str:eval_result_id>", apis.AdkEvalResultLegacyApi.as_view(),
              name="adk-eval-result-legacy"),
    lazy_path(_APP + "/metrics-info", apis.AdkMetricsInfoApi.as_view(), name="adk-metrics-info"),
]
