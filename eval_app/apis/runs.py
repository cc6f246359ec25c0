"""Our eval API, for scripts and CI: list eval sets, start a run, read a run's progress and results."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from google.adk.evaluation.eval_metrics import EvalMetric
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from access.fields import StrictCharField, StrictIntegerField
from sessions_app.apis.base import KeysetPageQuery
from sessions_app.page_tokens import NEXT_PAGE_HEADER, Page
from sessions_app.runtime import agent_names

from .. import judges, metrics, selectors, services
from ..evalset_files import EvalSetFileError, metric_problem, user_simulator_config_json
from ..models import EvalRun, EvalSet


PAGE_MAX = 1000


class PageQuery(KeysetPageQuery):
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=PAGE_MAX,
        help_text=f"Page the list: at most this many; the `{NEXT_PAGE_HEADER}` response header, when present, is the "
                  "`page_token` of the next page (keyset: every page costs the first's). Without it, the whole list.",
    )


NEXT_PAGE = OpenApiParameter(NEXT_PAGE_HEADER, str, OpenApiParameter.HEADER, response=[200],
                             description="With `page_size`: the `page_token` of the next page; absent on the last page.")


def _page_query(request: Request) -> dict[str, Any]:
    # A plain dict: from a QueryDict, DRF takes a blank optional field for an absent one.
    query = PageQuery(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


def _read_page(read: Callable[..., Page[Any]], query: dict[str, Any]) -> Page[Any]:
    """`read`'s page of `query`'s size after its token; a 400 naming page_token for one no page wrote."""
    try:
        return read(size=query["page_size"], token=query.get("page_token"))
    except ValueError as exc:
        raise ValidationError({"page_token": ["Not a page token of this list; pass the last page's "
                                              f"{NEXT_PAGE_HEADER} header as it came."]}) from exc


def _with_next(response: Response, page: Page[Any]) -> Response:
    if page.next_token:
        response[NEXT_PAGE_HEADER] = page.next_token
    return response


class EvalSetListApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="pk")
        eval_set_id = serializers.CharField()
        app_name = serializers.CharField()
        name = serializers.CharField()
        case_count = serializers.IntegerField()
        criteria = serializers.JSONField()

    @extend_schema(operation_id="eval_set_list", tags=["evals"], parameters=[PageQuery, NEXT_PAGE],
                   responses=OutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        """Every eval set, by agent and id; `page_size` pages the list (keyset)."""
        query = _page_query(request)
        if "page_size" not in query:
            return Response(self.OutputSerializer(selectors.eval_set_list(), many=True).data)
        page = _read_page(selectors.eval_set_page, query)
        return _with_next(Response(self.OutputSerializer(page.rows, many=True).data), page)


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    eval_set = serializers.CharField(source="eval_set.eval_set_id")
    app_name = serializers.CharField()
    status = serializers.CharField()
    metrics = serializers.JSONField()
    eval_ids = serializers.JSONField()
    repeats = serializers.IntegerField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    percent = serializers.IntegerField()
    error = serializers.CharField()


class EvalRunCreateApi(APIView):
    """Start a run of an eval set. `criteria` is test_config.json's: any metric ADK registers, with its
    options (threshold, match_type, judge_model_options, rubrics, ...); default: the set's, else ADK's.
    `judge_model` overrides the judge of every LLM-as-judge metric (and the user simulator's model)."""

    class InputSerializer(serializers.Serializer):
        app_name = StrictCharField(required=False)
        eval_ids = serializers.ListField(child=StrictCharField(), required=False, default=list)
        criteria = serializers.DictField(required=False)
        judge_model = StrictCharField(required=False, allow_blank=True, default="", max_length=255)
        user_simulator_config = serializers.DictField(required=False, allow_null=True, default=None)
        repeats = StrictIntegerField(min_value=1, max_value=50, default=1)

    @extend_schema(operation_id="eval_run_create", tags=["evals"], request=InputSerializer,
                   responses={201: RunOutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        eval_set = get_object_or_404(EvalSet, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        app_name = given.get("app_name") or eval_set.app_name
        if app_name not in agent_names():
            raise ValidationError({"app_name": [f"No agent named {app_name!r}."]})
        eval_metrics = _eval_metrics(given.get("criteria") or eval_set.criteria, given["judge_model"])
        try:
            run = services.eval_run_create(
                eval_set=eval_set, app_name=app_name, metrics=eval_metrics, judge_model=given["judge_model"],
                user_simulator_config=_user_simulator_config(given["user_simulator_config"]),
                eval_ids=given["eval_ids"], repeats=given["repeats"], source="api",
            )
        except services.EvalError as exc:
            raise ValidationError({"detail": [str(exc)]}) from exc
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


def _eval_metrics(criteria: dict[str, Any], judge_model: str) -> list[EvalMetric]:
    """ADK EvalMetrics of the criteria (ADK's default when none); a 400 naming the field otherwise."""
    if judge_model:
        try:
            judges.check_model(judge_model)
        except ValueError as exc:
            raise ValidationError({"judge_model": [str(exc)]}) from exc
    try:
        return metrics.eval_metrics(criteria or metrics.default_criteria(), judge_model=judge_model)
    except metrics.MetricConfigError as exc:
        raise ValidationError({"criteria": [metric_problem(exc)]}) from exc


def _user_simulator_config(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    try:
        return user_simulator_config_json(raw)
    except EvalSetFileError as exc:
        raise ValidationError({"user_simulator_config": exc.problems}) from exc


class EvalRunDetailApi(APIView):
    class ResultSerializer(serializers.Serializer):
        eval_id = serializers.CharField()
        repeat = serializers.IntegerField()
        status = serializers.CharField()
        metrics = serializers.JSONField()
        session_id = serializers.CharField(source="adk_session_id")
        user_id = serializers.CharField()
        error = serializers.CharField()
        adk_result = serializers.JSONField(help_text="ADK's EvalCaseResult of the case (without session_details).")
        judge_samples = serializers.JSONField(help_text="Each judge call: metric, invocation, sample, verdicts.")

    @extend_schema(
        operation_id="eval_run_detail", tags=["evals"], parameters=[PageQuery, NEXT_PAGE],
        responses=inline_serializer("EvalRunDetail", fields={
            **RunOutputSerializer().fields, "results": ResultSerializer(many=True),
        }),
    )
    def get(self, request: Request, pk: int) -> Response:
        """The run, and its results in case order: all of them, or with `page_size` a page (keyset)."""
        query = _page_query(request)
        run = get_object_or_404(EvalRun.objects.select_related("eval_set"), pk=pk)
        body: dict[str, Any] = dict(RunOutputSerializer(run).data)
        if "page_size" not in query:
            body["results"] = self.ResultSerializer(selectors.run_results_by_case(run), many=True).data
            return Response(body)
        page = _read_page(lambda **kw: selectors.run_results_by_case_page(run, **kw), query)
        body["results"] = self.ResultSerializer(page.rows, many=True).data
        return _with_next(Response(body), page)
