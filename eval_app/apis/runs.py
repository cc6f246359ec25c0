"""Our eval API, for scripts and CI: list eval sets, start a run, read a run's progress and results."""
from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.runtime import agent_names

from .. import selectors, services
from ..evalset_files import EvalSetFileError, specs_from_criteria, specs_from_stored
from ..forms import concurrency_setting
from ..models import EvalRun, EvalSet


class EvalSetListApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="pk")
        eval_set_id = serializers.CharField()
        app_name = serializers.CharField()
        name = serializers.CharField()
        case_count = serializers.IntegerField()
        criteria = serializers.JSONField()

    @extend_schema(operation_id="eval_set_list", tags=["evals"], responses=OutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(self.OutputSerializer(selectors.eval_set_list(), many=True).data)


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
    """Start a run of an eval set; `criteria` is test_config.json's (defaults: the set's, else ADK's)."""

    class InputSerializer(serializers.Serializer):
        app_name = serializers.CharField(required=False)
        eval_ids = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        criteria = serializers.DictField(required=False)
        repeats = serializers.IntegerField(min_value=1, max_value=50, default=1)

    @extend_schema(operation_id="eval_run_create", tags=["evals"], request=InputSerializer,
                   responses={201: RunOutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        eval_set = get_object_or_404(EvalSet, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        app_name = data.validated_data.get("app_name") or eval_set.app_name
        if app_name not in agent_names():
            raise ValidationError({"app_name": [f"No agent named {app_name!r}."]})
        try:
            criteria = data.validated_data.get("criteria")
            specs = specs_from_criteria("criteria", criteria) if criteria else specs_from_stored(eval_set.criteria)
            run = services.eval_run_create(
                eval_set=eval_set, app_name=app_name, specs=specs, eval_ids=data.validated_data["eval_ids"],
                repeats=data.validated_data["repeats"], concurrency=concurrency_setting(), source="api",
            )
        except EvalSetFileError as exc:
            raise ValidationError({"criteria": exc.problems}) from exc
        except services.EvalError as exc:
            raise ValidationError({"detail": [str(exc)]}) from exc
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


class EvalRunDetailApi(APIView):
    class ResultSerializer(serializers.Serializer):
        eval_id = serializers.CharField()
        repeat = serializers.IntegerField()
        status = serializers.CharField()
        metrics = serializers.JSONField()
        session_id = serializers.CharField(source="adk_session_id")
        user_id = serializers.CharField()
        error = serializers.CharField()

    @extend_schema(
        operation_id="eval_run_detail", tags=["evals"],
        responses=inline_serializer("EvalRunDetail", fields={
            **RunOutputSerializer().fields, "results": ResultSerializer(many=True),
        }),
    )
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(EvalRun.objects.select_related("eval_set"), pk=pk)
        body: dict[str, Any] = dict(RunOutputSerializer(run).data)
        body["results"] = self.ResultSerializer(selectors.run_results_by_case(run), many=True).data
        return Response(body)
