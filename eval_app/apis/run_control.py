"""Cancel and resume a run, for scripts and CI: `POST /api/eval/runs/<pk>/cancel`, `.../resume`.

Cancel: the queued cases are cancelled at once, the running ones stop at their
worker's next heartbeat, then the run is `stopped`. Resume: a stopped,
interrupted or failed run's unfinished cases are queued again; finished cases
never run twice. 409 when the run's status does not allow it, 404 for no such run.
"""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..models import EvalRun
from .runs import RunOutputSerializer

_RESPONSES = {
    200: RunOutputSerializer,
    404: OpenApiResponse(description="No such run."),
    409: OpenApiResponse(description="The run's status does not allow it (`detail` says why)."),
}


class _RunActionApi(APIView):
    """POST: `apply` a service to the run; 409 naming why when its status does not allow it."""

    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(EvalRun, pk=pk)
        try:
            self.apply(run=run)
        except services.EvalError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(RunOutputSerializer(EvalRun.objects.select_related("eval_set").get(pk=pk)).data)


@extend_schema_view(post=extend_schema(operation_id="eval_run_cancel", tags=["evals"], request=None, responses=_RESPONSES))
class EvalRunCancelApi(_RunActionApi):
    apply = staticmethod(services.eval_run_stop)


@extend_schema_view(post=extend_schema(operation_id="eval_run_resume", tags=["evals"], request=None, responses=_RESPONSES))
class EvalRunResumeApi(_RunActionApi):
    apply = staticmethod(services.eval_run_resume)
