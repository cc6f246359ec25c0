"""ADK's eval routes, which adk-web's Eval tab calls, on our eval sets, cases and runs.

The paths, bodies and JSON of `adk web`'s dev server (google/adk/cli/dev_server.py),
under /api/dev/apps/{app}/...: a set created in adk-web shows up under /evals/ and
the other way round, and results outlive restarts. Errors are ADK's
`{"detail": ...}` with ADK's status codes; a body that is not the model ADK
expects, an unknown metric or a bad criterion is our usual 400 naming the
field (ADK's server answers 422, or fails the run). Results are the ADK
EvalCaseResults ADK's engine answered for each case, stored whole.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.http import JsonResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from google.adk.cli.dev_server import (
    AddSessionToEvalSetRequest,
    CreateEvalSetRequest,
    EvalResult,
    ListEvalResultsResponse,
    ListEvalSetsResponse,
    ListMetricsInfoResponse,
    RunEvalRequest,
    RunEvalResponse,
    RunEvalResult,
)
from google.adk.errors.not_found_error import NotFoundError
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from pydantic import BaseModel, ConfigDict, Field, RootModel
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from access.limits import MAX_ID_CHARS, NON_BLANK_TEXT, check_id
from adk_compat import redact_credential_secrets
from sessions_app import selectors as session_selectors
from sessions_app.apis.base import AdkApi, BadRequest, validate_adk
from sessions_app.apis.schema import NULL
from sessions_app.runtime import agent_names

from .. import metrics, selectors, services
from ..evalset_files import EvalSetFileError, user_simulator_config_json
from ..models import EvalCase, EvalRun, EvalSet
from .adk_results import case_results

RUN_POLL_SECONDS = 0.25
RUN_WAIT_SECONDS = 3600  # ADK's run route waits as long as the run takes; ours gives up after an hour


class AdkEvalSetIdList(RootModel[list[str]]):
    """Schema only: the legacy routes' bare list of ids."""


class AdkRunEvalResultList(RootModel[list[RunEvalResult]]):
    """Schema only: the legacy run route's bare list of results."""


# ---- schema only: ADK's request models with the rules this server enforces stated ----------------
# (the views validate with ADK's own models, then `check_id` and the services' rules).


class EvalSetToCreate(AdkEvalSet):
    """ADK's EvalSet as the create routes read it: only the id counts, a file name (ADK's rule, padding stripped)."""

    eval_set_id: str = Field(pattern=services.ID_PATTERN_PADDED, max_length=MAX_ID_CHARS)


class CreateEvalSetBody(CreateEvalSetRequest):
    eval_set: EvalSetToCreate


class AddSessionBody(AddSessionToEvalSetRequest):
    eval_id: str = Field(pattern=NON_BLANK_TEXT, max_length=MAX_ID_CHARS)


def _one_conversation(schema: dict[str, Any]) -> None:
    """ADK's EvalCase validator: exactly one of `conversation` and `conversation_scenario` (null is none).

    Said as "not both and not neither" rather than as a oneOf of two partial objects: a client generator
    reads a oneOf as a union of those two fragments and loses the case's own fields (openapi-python-client)."""
    both = {"required": ["conversation", "conversationScenario"],
            "properties": {"conversation": {"type": "array"}, "conversationScenario": {"type": "object"}}}
    neither = {"properties": {"conversation": {"type": "null"}, "conversationScenario": {"type": "null"}}}
    schema["not"] = {"anyOf": [both, neither]}


class EvalCaseBody(AdkEvalCase):
    model_config = ConfigDict(json_schema_extra=_one_conversation)


class RunEvalBody(RunEvalRequest):
    eval_metrics: list[EvalMetric] = Field(min_length=1, description="At least one metric to score the cases by.")


M = TypeVar("M", bound=BaseModel)
TAGS = ["adk evals"]


def _adk_json(model: BaseModel) -> Any:
    """What ADK's server sends for a model: camelCase, no nulls, credential secrets redacted."""
    return redact_credential_secrets(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def _body(model: type[M], data: Any) -> M:
    """The body as ADK's model, or a 400: `validate_adk`, plus what the eval models' own validators
    raise besides ValueError (an unknown user persona is ADK's NotFoundError)."""
    try:
        return validate_adk(model, data)
    except NotFoundError as exc:
        raise ValidationError({"non_field_errors": [f"Not a valid {model.__name__}: {exc}"]}) from exc


def _null() -> JsonResponse:
    """ADK's routes that return nothing send JSON `null` (DRF would send an empty body)."""
    return JsonResponse(None, safe=False)


def _require_agent(app_name: str) -> None:
    if app_name not in agent_names():
        raise NotFound(f"Agent not found: {app_name!r}.")


def _require_set(app_name: str, eval_set_id: str, *, missing: type[APIException] = NotFound) -> EvalSet:
    """The app's eval set; ADK answers an unknown one with 404 on most routes, 400 on some."""
    eval_set = selectors.eval_set_for_app(app_name, eval_set_id)
    if eval_set is None:
        raise missing(f"Eval set `{eval_set_id}` not found.")
    return eval_set


def _require_case(eval_set: EvalSet, eval_id: str) -> EvalCase:
    case = selectors.eval_case_find(eval_set, eval_id)
    if case is None:
        raise NotFound(f"Eval case `{eval_id}` not found in eval set `{eval_set.eval_set_id}`.")
    return case


def _create_set(app_name: str, eval_set_id: str) -> EvalSet:
    """ADK's create: only the id counts (cases sent with it are ignored); the name is the id."""
    check_id(eval_set_id, "eval_set.eval_set_id")
    _require_agent(app_name)
    try:
        return services.eval_set_create(app_name=app_name, eval_set_id=eval_set_id, name=eval_set_id)
    except services.EvalError as exc:
        raise BadRequest(f"eval_set.eval_set_id: {exc}") from exc


class AdkEvalSetListApi(AdkApi):
    @extend_schema(operation_id="adk_eval_set_list", tags=TAGS, responses={200: ListEvalSetsResponse})
    def get(self, request: Request, app_name: str) -> Response:
        """The ids of the agent's eval sets (and of the sets for any agent)."""
        return Response(_adk_json(ListEvalSetsResponse(eval_set_ids=selectors.eval_set_ids_for_app(app_name))))

    @extend_schema(operation_id="adk_eval_set_create", tags=TAGS, request=CreateEvalSetBody,
                   responses={200: AdkEvalSet})
    def post(self, request: Request, app_name: str) -> Response:
        """Create an empty eval set; answers it, as ADK does (400 when the id is taken or not a file name)."""
        body = _body(CreateEvalSetRequest, request.data)
        eval_set = _create_set(app_name, body.eval_set.eval_set_id)
        return Response(_adk_json(selectors.adk_eval_set(eval_set)))


class AdkEvalSetIdsLegacyApi(AdkApi):
    @extend_schema(operation_id="adk_eval_set_list_legacy", tags=TAGS, deprecated=True,
                   responses={200: AdkEvalSetIdList})
    def get(self, request: Request, app_name: str) -> Response:
        return Response(selectors.eval_set_ids_for_app(app_name))


class AdkEvalSetCreateLegacyApi(AdkApi):
    @extend_schema(operation_id="adk_eval_set_create_legacy", tags=TAGS, deprecated=True, request=None,
                   parameters=[OpenApiParameter("eval_set_id", str, OpenApiParameter.PATH, pattern=services.ID_PATTERN_PADDED,
                                                description="The new set's id: letters, digits and _.")],
                   responses={200: NULL})
    def post(self, request: Request, app_name: str, eval_set_id: str) -> JsonResponse:
        _create_set(app_name, eval_set_id)
        return _null()


class AdkEvalSetApi(AdkApi):
    """Not in ADK 2.13's server, though adk-web calls both: its eval set details and its delete button."""

    @extend_schema(operation_id="adk_eval_set_get", tags=TAGS, responses={200: AdkEvalSet})
    def get(self, request: Request, app_name: str, eval_set_id: str) -> Response:
        return Response(_adk_json(selectors.adk_eval_set(_require_set(app_name, eval_set_id))))

    @extend_schema(operation_id="adk_eval_set_delete", tags=TAGS, responses={200: NULL})
    def delete(self, request: Request, app_name: str, eval_set_id: str) -> JsonResponse:
        services.eval_set_delete(eval_set=_require_set(app_name, eval_set_id))
        return _null()


class AdkEvalCaseIdsApi(AdkApi):
    @extend_schema(operation_id="adk_eval_case_list", tags=TAGS, responses={200: AdkEvalSetIdList})
    def get(self, request: Request, app_name: str, eval_set_id: str) -> Response:
        """The ids of the set's cases, sorted; an unknown set is a 400, as in ADK."""
        eval_set = _require_set(app_name, eval_set_id, missing=BadRequest)
        return Response(sorted(selectors.eval_case_ids(eval_set)))


class AdkEvalCaseApi(AdkApi):
    @extend_schema(operation_id="adk_eval_case_get", tags=TAGS, responses={200: AdkEvalCase})
    def get(self, request: Request, app_name: str, eval_set_id: str, eval_case_id: str) -> Response:
        case = _require_case(_require_set(app_name, eval_set_id), eval_case_id)
        return Response(_adk_json(selectors.adk_eval_case(case)))

    @extend_schema(operation_id="adk_eval_case_update", tags=TAGS, request=EvalCaseBody, responses={200: NULL})
    def put(self, request: Request, app_name: str, eval_set_id: str, eval_case_id: str) -> JsonResponse:
        """Replace the case with the body (an ADK EvalCase); its evalId, if any, must be the route's."""
        data = _body(AdkEvalCase, request.data)
        if data.eval_id and data.eval_id != eval_case_id:
            raise BadRequest("Eval id in EvalCase should match the eval id in the API route.")
        data.eval_id = eval_case_id
        case = _require_case(_require_set(app_name, eval_set_id), eval_case_id)
        services.eval_case_update(case=case, data=data)
        return _null()

    @extend_schema(operation_id="adk_eval_case_delete", tags=TAGS, responses={200: NULL})
    def delete(self, request: Request, app_name: str, eval_set_id: str, eval_case_id: str) -> JsonResponse:
        services.eval_case_delete(case=_require_case(_require_set(app_name, eval_set_id), eval_case_id))
        return _null()


@extend_schema_view(
    get=extend_schema(operation_id="adk_eval_case_get_legacy", deprecated=True),
    put=extend_schema(operation_id="adk_eval_case_update_legacy", deprecated=True),
    delete=extend_schema(operation_id="adk_eval_case_delete_legacy", deprecated=True),
)
class AdkEvalCaseLegacyApi(AdkEvalCaseApi):
    pass


class AdkAddSessionApi(AdkApi):
    @extend_schema(operation_id="adk_eval_add_session", tags=TAGS, request=AddSessionBody,
                   responses={200: NULL})
    def post(self, request: Request, app_name: str, eval_set_id: str) -> JsonResponse:
        """Add a stored session to the set as a case: each user turn with the agent's final answer and
        tool calls as the expectation, and the session's own user and initial state (ADK uses the
        agent's empty state). Case ids are ADK's, any text (adk-web proposes the session id)."""
        body = _body(AddSessionToEvalSetRequest, request.data)
        check_id(body.eval_id, "evalId")
        session = session_selectors.session_find(app_name=app_name, user_id=body.user_id, session_id=body.session_id)
        if session is None:
            raise NotFound("Session not found")
        eval_set = _require_set(app_name, eval_set_id)
        case = selectors.eval_case_from_session(session, eval_id=body.eval_id)
        if not case.conversation:
            raise BadRequest("sessionId: this session has no user turns to make a case of.")
        try:
            services.eval_case_add(eval_set=eval_set, case=case)
        except services.EvalError as exc:
            raise BadRequest(f"evalId: {exc}") from exc
        return _null()


@extend_schema_view(post=extend_schema(operation_id="adk_eval_add_session_legacy", deprecated=True))
class AdkAddSessionLegacyApi(AdkAddSessionApi):
    pass


class AdkEvalRunApi(AdkApi):
    legacy = False

    @extend_schema(operation_id="adk_eval_run", tags=TAGS, request=RunEvalBody, responses={200: RunEvalResponse})
    def post(self, request: Request, app_name: str, eval_set_id: str) -> StreamingHttpResponse:
        """Run the set's cases (all when none are named) on ADK's evaluation engine and answer their
        results, as ADK does, once the run is over. The run is an ordinary adkui run: it shows under
        /evals/ as it goes, and its results stay in eval-results. Metrics: any ADK registers, with
        its criterion; conversation scenarios run with ADK's user simulator; no Live API."""
        body = _body(RunEvalRequest, request.data)
        eval_set = _require_set(app_name, eval_set_id, missing=BadRequest)
        _require_agent(app_name)
        if body.live_model_config is not None:
            raise BadRequest("live_model_config: adkui does not run evals on the Live API.")
        simulator = _user_simulator_config(body.user_simulator_config)
        try:
            run = services.eval_run_create(
                eval_set=eval_set, app_name=app_name, metrics=_eval_metrics(body.eval_metrics),
                user_simulator_config=simulator, eval_ids=body.eval_case_ids or body.eval_ids, source="adk-web",
            )
        except services.EvalError as exc:
            raise BadRequest(str(exc)) from exc
        # The answer waits for the run without holding a thread: under ASGI every
        # sync view shares one, which the run's own database work needs too.
        return StreamingHttpResponse(_run_answer(run.pk, legacy=self.legacy), content_type="application/json")


@extend_schema_view(post=extend_schema(operation_id="adk_eval_run_legacy", deprecated=True,
                                       responses={200: AdkRunEvalResultList}))
class AdkEvalRunLegacyApi(AdkEvalRunApi):
    legacy = True


def _eval_metrics(requested: list[EvalMetric]) -> list[EvalMetric]:
    """The request's EvalMetrics, checked by ADK's models and registry (`metrics.eval_metrics`):
    each one's criterion as test_config.json would give it, else its threshold. The informational
    metrics need neither: the engine records them for every run, as ADK's route adds them."""
    criteria: dict[str, Any] = {}
    for index, metric in enumerate(requested):
        if metric.metric_name in criteria:
            raise BadRequest(f"eval_metrics.{index}.metric_name: {metric.metric_name!r} is asked for twice.")
        if metric.criterion is not None:
            criteria[metric.metric_name] = metric.criterion.model_dump(mode="json", exclude_unset=True)
        elif metric.threshold is not None:
            criteria[metric.metric_name] = metric.threshold
        elif metric.metric_name not in metrics.INFORMATIONAL:
            raise BadRequest(f"eval_metrics.{index}: {metric.metric_name!r} needs a threshold or a criterion.")
    try:
        checked = metrics.eval_metrics(criteria)
    except metrics.MetricConfigError as exc:
        raise BadRequest(_metric_field(exc, list(criteria)) + f": {exc}") from exc
    asked = {metric.metric_name: metric for metric in requested}
    return [_as_asked(metric, asked[metric.metric_name]) for metric in checked]


def _as_asked(checked: EvalMetric, asked: EvalMetric) -> EvalMetric:
    """A metric asked for by threshold alone runs as ADK's route runs it: as asked, with no
    criterion (so its results are ADK's); a judge metric keeps the criterion naming its judge."""
    if asked.criterion is None and not metrics.is_judge_metric(asked.metric_name):
        return EvalMetric(metric_name=asked.metric_name, threshold=asked.threshold)
    return checked


def _metric_field(exc: metrics.MetricConfigError, names: list[str]) -> str:
    """`criteria.<metric>.rest` (metrics' naming) as the request's `eval_metrics.<i>.criterion.rest`."""
    for index, name in enumerate(names):
        head = f"criteria.{name}"
        if exc.field == head:
            return f"eval_metrics.{index} ({name})"
        if exc.field.startswith(head + "."):
            return f"eval_metrics.{index}.criterion{exc.field[len(head):]}"
    return "eval_metrics"


def _user_simulator_config(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    try:
        return user_simulator_config_json(raw)
    except EvalSetFileError as exc:
        raise ValidationError({"user_simulator_config": exc.problems}) from exc


async def _run_answer(run_pk: int, *, legacy: bool) -> AsyncIterator[bytes]:
    deadline = time.monotonic() + RUN_WAIT_SECONDS
    run = await sync_to_async(selectors.run_find)(run_pk)
    while run is not None and run.is_active and time.monotonic() < deadline:
        await asyncio.sleep(RUN_POLL_SECONDS)
        run = await sync_to_async(selectors.run_find)(run_pk)
    answer = await sync_to_async(_run_eval_json)(run, legacy=legacy)
    yield JsonResponse(answer, safe=False).content


def _run_eval_json(run: EvalRun | None, *, legacy: bool) -> Any:
    results = [_run_eval_result(case) for case in case_results(run, sessions=False, live=True)] if run else []
    if legacy:
        return [_adk_json(result) for result in results]
    return _adk_json(RunEvalResponse(run_eval_results=results))


def _run_eval_result(case: AdkEvalCaseResult) -> RunEvalResult:
    return RunEvalResult(
        eval_set_file=case.eval_set_file or case.eval_set_id, eval_set_id=case.eval_set_id, eval_id=case.eval_id,
        final_eval_status=case.final_eval_status, overall_eval_metric_results=case.overall_eval_metric_results,
        eval_metric_result_per_invocation=case.eval_metric_result_per_invocation,
        user_id=case.user_id or "", session_id=case.session_id,
    )


class AdkEvalResultIdsApi(AdkApi):
    @extend_schema(operation_id="adk_eval_result_list", tags=TAGS, responses={200: ListEvalResultsResponse})
    def get(self, request: Request, app_name: str) -> Response:
        """One result per finished run of the agent, oldest first."""
        ids = [selectors.eval_set_result_id(run) for run in selectors.finished_runs_for_app(app_name)]
        return Response(_adk_json(ListEvalResultsResponse(eval_result_ids=ids)))


class AdkEvalResultIdsLegacyApi(AdkApi):
    @extend_schema(operation_id="adk_eval_result_list_legacy", tags=TAGS, deprecated=True,
                   responses={200: AdkEvalSetIdList})
    def get(self, request: Request, app_name: str) -> Response:
        return Response([selectors.eval_set_result_id(run) for run in selectors.finished_runs_for_app(app_name)])


class AdkEvalResultApi(AdkApi):
    @extend_schema(operation_id="adk_eval_result_get", tags=TAGS, responses={200: EvalResult})
    def get(self, request: Request, app_name: str, eval_result_id: str) -> Response:
        """A finished run as ADK's EvalSetResult, each case with the session it ran in."""
        run = selectors.finished_run_for_result_id(app_name, eval_result_id)
        if run is None:
            raise NotFound(f"Eval set result `{eval_result_id}` not found.")
        result = EvalResult(
            eval_set_result_id=eval_result_id, eval_set_result_name=eval_result_id,
            eval_set_id=run.eval_set.eval_set_id, eval_case_results=case_results(run, sessions=True, live=False),
            creation_timestamp=run.created_at.timestamp(),
        )
        return Response(_adk_json(result))


@extend_schema_view(get=extend_schema(operation_id="adk_eval_result_get_legacy", deprecated=True))
class AdkEvalResultLegacyApi(AdkEvalResultApi):
    pass


class AdkMetricsInfoApi(AdkApi):
    @extend_schema(operation_id="adk_eval_metrics_info", tags=TAGS, responses={200: ListMetricsInfoResponse})
    def get(self, request: Request, app_name: str) -> Response:
        """Every metric ADK's registry holds (adkui's final_session_state_match too), as ADK lists them."""
        return Response(_adk_json(ListMetricsInfoResponse(metrics_info=metrics.metrics_info())))
