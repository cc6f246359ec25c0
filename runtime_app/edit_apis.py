"""Edit and continue over the API: "what if this stored model call had been sent something else?"

`POST /api/dev/model-calls/{id}/continue` takes the edits (any of the request's
parts, and state keys of any scope), forks the call's session at the start of
its invocation into a sandbox, re-runs it with the earlier calls answered from
the record (`edit_continue`), and answers once the continued invocation ended,
with the fork's ids and its new events. An edit ADK's `LlmRequest` refuses is a
400 naming the field, and nothing is created. The model calls of a session,
with their ids, come from `GET /api/dev/apps/{app}/users/{user}/sessions/{session}/model-calls`.
"""
from __future__ import annotations

from asgiref.sync import async_to_sync
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from pydantic.alias_generators import to_camel
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from access.fields import StrictCharField
from inspector_app.models import ModelCall
from sessions_app import selectors
from sessions_app.apis.base import AdkApi, AdkBodySerializer, _require_session, _validated
from sessions_app.apis.schema import errors
from sessions_app.keys import SessionKey
from sessions_app.wire import adk_json

from . import edit_continue
from .edit_continue import EditError, Edits


@extend_schema_serializer(component_name="ModelCallEdits")
class EditsSerializer(AdkBodySerializer):
    """What to change of the stored request; a part left out is sent as stored (or, before the edited
    call, as today's agent builds it). The forms are the inspector's, as `model-calls` lists them."""

    systemInstruction = StrictCharField(source="system_instruction", required=False, allow_blank=True,
                                              trim_whitespace=False, help_text="The whole system instruction, as text.")
    contents = serializers.JSONField(required=False, help_text="genai `Content` objects: `[{role, parts: [...]}]`.")
    tools = serializers.JSONField(
        required=False, help_text="Tool declarations: `[{name, kind: 'function', description, parameters}]` "
                                  "(parameters a JSON schema), or `{name, kind: 'builtin', spec}`.")
    config = serializers.JSONField(required=False, help_text="genai `GenerateContentConfig` fields, the whole config.")
    state = serializers.DictField(required=False, default=dict,
                                  help_text="State to set in the fork before the run: `key`, `user:key`, `app:key`.")


@extend_schema_serializer(component_name="EditAndContinueResult")
class ContinueOutputSerializer(serializers.Serializer):
    appName = serializers.CharField(help_text="The fork's sandbox app: `agent@edit-…`.")
    userId = serializers.CharField()
    sessionId = serializers.CharField()
    forkId = serializers.IntegerField(help_text="The fork's id in adkui's pages (`/sessions/{forkId}/`).")
    label = serializers.CharField(help_text="What was edited, as the fork is labelled.")
    pageUrl = serializers.CharField()
    comparisonUrl = serializers.CharField()
    events = serializers.ListField(child=serializers.DictField(), help_text="The fork's events of the continued run.")


@extend_schema_serializer(component_name="StoredModelCall")
class ModelCallSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    invocationId = serializers.CharField(source="invocation_id")
    agentName = serializers.CharField(source="agent_name")
    eventId = serializers.CharField(source="event_id", help_text="The event it produced.")
    request = serializers.DictField(help_text="As stored: system_instruction, contents, tools, config.")


class ModelCallContinueApi(AdkApi):
    InputSerializer = EditsSerializer
    OutputSerializer = ContinueOutputSerializer

    @extend_schema(operation_id="model_call_continue", tags=["debug"], request=InputSerializer,
                   responses={200: OutputSerializer, **errors(404)})
    def post(self, request: Request, pk: int) -> Response:
        """Edit a stored model call and continue from it in a fork (sandboxed: the original and its
        `app:`/`user:` state are untouched). The invocation's earlier model and tool calls are answered
        from the record; the edited request goes to the model; the rest runs live. Answers when the
        continued run has ended; a model error in it is one of the returned events."""
        call = get_object_or_404(ModelCall.objects.select_related("session", "session__app"), pk=pk)
        body = _validated(self.InputSerializer, request.data)
        edits = Edits(**{name: body[name] for name in ("system_instruction", "contents", "tools", "config", "state")
                         if name in body})
        try:
            plan = edit_continue.continue_create(model_call=call, edits=edits)
        except EditError as exc:
            raise ValidationError({_api_field(exc.field): [exc.message]}) from exc
        async_to_sync(edit_continue.continue_run)(plan)
        fork = plan.fork
        events = [adk_json(e) for _, e in selectors.event_page(fork, after_seq=fork.forked_at_seq or 0)]
        return Response(self.OutputSerializer({
            "appName": fork.app.name, "userId": fork.user_id, "sessionId": fork.session_id, "forkId": fork.pk,
            "label": fork.edit_label, "events": events,
            "pageUrl": request.build_absolute_uri(reverse("runtime:session_detail", args=[fork.pk])),
            "comparisonUrl": request.build_absolute_uri(reverse("runtime:edit_comparison", args=[fork.pk])),
        }).data)


class ModelCallListApi(AdkApi):
    PAGE = 100

    class QuerySerializer(serializers.Serializer):
        after = serializers.IntegerField(required=False, min_value=0, default=0,
                                         help_text="The `nextAfter` of the previous page.")

    @extend_schema_serializer(component_name="StoredModelCallPage")
    class OutputSerializer(serializers.Serializer):
        modelCalls = ModelCallSerializer(many=True)
        nextAfter = serializers.IntegerField(allow_null=True, help_text="Pass as `after` for the next page; null: last page.")

    @extend_schema(operation_id="model_call_list", tags=["debug"], parameters=[QuerySerializer],
                   responses={200: OutputSerializer})
    def get(self, request: Request, app_name: str, user_id: str, session_id: str) -> Response:
        """The session's recorded model calls in the order they were stored, a page at a time, with the
        ids `continue` takes."""
        session = _require_session(SessionKey(app_name, user_id, session_id))
        after = _validated(self.QuerySerializer, request.query_params)["after"]
        calls = list(ModelCall.objects.filter(session=session, pk__gt=after).order_by("pk")[: self.PAGE + 1])
        more = len(calls) > self.PAGE
        calls = calls[: self.PAGE]
        return Response(self.OutputSerializer({"modelCalls": calls, "nextAfter": calls[-1].pk if more else None}).data)


def _api_field(field: str) -> str:
    """An edit's field (`system_instruction`, `config.temperature`) as the API names it."""
    head, _, rest = field.partition(".")
    return to_camel(head) + (f".{rest}" if rest else "") if "_" in head else field
