from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import apis

app_name = "eval_api"
urlpatterns: list[URLPattern | URLResolver] = [
    path("evals/sets", apis.EvalSetListApi.as_view(), name="eval-sets"),
    path("evals/sets/<int:pk>/runs", apis.EvalRunCreateApi.as_view(), name="eval-run-create"),
    path("evals/runs/<int:pk>", apis.EvalRunDetailApi.as_view(), name="eval-run"),
]
