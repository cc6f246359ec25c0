"""`/api/` routes: ADK's api-server paths (no trailing slash, so ADK clients work
unchanged), our additions beside them, and the OpenAPI schema and docs."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.urls import URLPattern, URLResolver
from django.views.decorators.csrf import csrf_exempt

from lazy_imports import lazy_path, made_by, views_in

if TYPE_CHECKING:
    from rest_framework.views import APIView  # imported with the APIs it combines (lazy_imports.py)

app_name = "sessions_api"
apis = views_in("sessions_app.apis")  # imported on first use: see lazy_imports.py


def by_method(*operations: type[APIView]) -> Callable[..., HttpResponseBase]:
    """One path, several APIs: ADK puts list and create (and get, patch, delete)
    on one path, and Django routes by path alone, so dispatch on the HTTP method
    to the one APIView implementing it.

    `cls` is a class combining them, only so drf-spectacular's schema sees every
    operation of the path; requests never instantiate it.
    """
    views: dict[str, Callable[..., HttpResponseBase]] = {}
    for operation in operations:
        for method in operation().allowed_methods:
            if method != "OPTIONS":
                views[method] = operation.as_view()
    if "GET" in views:
        views["HEAD"] = views["GET"]
    allowed = ", ".join([*views, "OPTIONS"])

    @csrf_exempt  # as DRF's own views: CSRF is for cookie-authenticated sessions only
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        handler = views.get(request.method or "")
        if handler is not None:
            return handler(request, *args, **kwargs)
        if request.method == "OPTIONS":
            response = operations[0].as_view()(request, *args, **kwargs)
        else:
            response = JsonResponse({"detail": f'Method "{request.method}" not allowed.'}, status=405)
        response["Allow"] = allowed
        return response

    view.cls = type("".join(op.__name__ for op in operations), operations, {})  # type: ignore[attr-defined]
    view.initkwargs = {}  # type: ignore[attr-defined]
    return view


SESSIONS = "apps/<str:app_name>/users/<str:user_id>/sessions"
SESSION = SESSIONS + "/<str:session_id>"

urlpatterns: list[URLPattern | URLResolver] = [
    lazy_path(SESSIONS, made_by(by_method, apis.SessionListApi, apis.SessionCreateApi), name="sessions"),
    lazy_path(
        SESSION,
        made_by(by_method, apis.SessionGetApi, apis.SessionCreateWithIdApi, apis.SessionUpdateApi,
                apis.SessionDeleteApi),
        name="session",
    ),
    # Not in ADK's server:
    lazy_path(SESSION + "/events", made_by(by_method, apis.EventListApi, apis.EventCreateApi), name="session-events"),
    lazy_path(SESSION + "/state", apis.StateGetApi.as_view(), name="session-state"),
    lazy_path("apps/<str:app_name>/search", apis.EventSearchApi.as_view(), name="event-search"),
]
