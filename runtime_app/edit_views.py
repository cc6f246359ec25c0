"""Pages of edit and continue: the form on a stored model call, its submission, the fork beside its original.

The form opens with the exact stored request (system instruction, contents,
tool declarations, generation config as JSON) and the state of every scope
as it was when the call's invocation began, the keys that fed the
instruction's templates marked. Submitted, it forks and continues
(`edit_continue.edit_and_continue`) and goes to the fork's page, which
streams the run; the comparison page polls itself while the run goes on.
"""
from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from access.limits import InputError
from inspector_app import inspection
from inspector_app.models import ModelCall
from sessions_app import selectors
from sessions_app.models import SCOPE_APP, SCOPE_SESSION, SCOPE_USER, Session
from sessions_app.views import HtmxHttpRequest

from . import edit_continue
from .edit_continue import EditError, Edits

SCOPES = (SCOPE_SESSION, SCOPE_USER, SCOPE_APP)
PREFIXES = {SCOPE_SESSION: "", SCOPE_USER: "user:", SCOPE_APP: "app:"}


def _call(pk: int) -> ModelCall:
    return get_object_or_404(ModelCall.objects.select_related("session", "session__app"), pk=pk)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def start_state(call: ModelCall) -> dict[str, dict[str, Any]]:
    """State of each scope as the call's invocation began (the fork starts from it)."""
    start = edit_continue.invocation_start(call)
    state = selectors.state_as_of(call.session, start.seq - 1)
    return {SCOPE_SESSION: state.session, SCOPE_USER: state.user, SCOPE_APP: state.app}


def form_context(call: ModelCall, data: QueryDict | None = None, error: InputError | None = None) -> dict[str, Any]:
    request = call.request or {}
    try:
        state = start_state(call)
    except EditError as exc:
        state, error = {scope: {} for scope in SCOPES}, error or exc
    fields = {
        "system_instruction": request.get("system_instruction") or "",
        "contents": _pretty(request.get("contents") or []),
        "tools": _pretty(request.get("tools") or []),
        "config": _pretty(request.get("config") or {}),
    } | {f"state_{scope}": _pretty(state[scope]) for scope in SCOPES}
    if data is not None:
        fields |= {name: data.get(name, value) for name, value in fields.items()}
    return {
        "call": call, "session": call.session, "fields": fields, "error": error,
        "placeholders": inspection.placeholders(call), "scopes": SCOPES,
    }


@require_GET
def edit_form(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    call = _call(pk)
    if call.session is None:
        raise Http404("This model call's session is no longer stored.")
    return render(request, "runtime_app/edit_form.html", form_context(call))


def edits_from_form(call: ModelCall, data: QueryDict) -> Edits:
    """The form's fields as Edits: only what differs from the stored request and the starting state."""
    stored = call.request or {}
    parsed = {name: edit_continue.parse_json_field(name, data.get(name, "")) for name in ("contents", "tools", "config")}
    state: dict[str, Any] = {}
    before = start_state(call)
    for scope in SCOPES:
        field = f"state_{scope}"
        values = edit_continue.parse_json_field(field, data.get(field, "{}"))
        if not isinstance(values, dict):
            raise EditError(field, "must be a JSON object of keys and values.")
        state |= {PREFIXES[scope] + k: v for k, v in values.items() if before[scope].get(k, _MISSING) != v}
    instruction = data.get("system_instruction", "").replace("\r\n", "\n")
    return Edits(
        system_instruction=instruction if instruction != (stored.get("system_instruction") or "") else None,
        state=state, **parsed,
    )


_MISSING = object()


async def edit_submit(request: HttpRequest, pk: int) -> HttpResponse:
    """Fork and continue, then go to the fork's page; the form again, 400, naming the field, for a bad edit."""
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    call = await sync_to_async(_call)(pk)
    try:
        edits = await sync_to_async(edits_from_form)(call, request.POST)
        fork = await edit_continue.edit_and_continue(model_call=call, edits=edits)
    except InputError as exc:  # an EditError, or state over the size cap
        context = await sync_to_async(form_context)(call, request.POST, exc)
        return await sync_to_async(render)(request, "runtime_app/edit_form.html", context, status=400)
    url = reverse("runtime:session_detail", args=[fork.pk])
    return HttpResponseClientRedirect(url) if getattr(request, "htmx", False) else HttpResponse(
        status=303, headers={"Location": url})


@require_GET
def edit_comparison(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The fork beside its original from the edited turn on; htmx polls get the turns section only."""
    fork = get_object_or_404(Session.objects.select_related("app", "forked_from", "forked_from__app"), pk=pk)
    try:
        context = edit_continue.comparison(fork)
    except EditError as exc:
        raise Http404(exc.message) from exc
    template = "runtime_app/edit_comparison.html"
    if request.htmx:
        template += "#turns"
    return render(request, template, context)
