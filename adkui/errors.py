"""Error pages: JSON under /api/ (as DRF words its own errors), HTML elsewhere."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def api_route_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any path under /api/ that no API serves (also with DEBUG on, where Django
    would answer with its HTML debug page)."""
    return JsonResponse({"detail": f"No API route {request.path!r}."}, status=404)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return defaults.server_error(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": str(exception) or "You do not have permission to do this."}, status=403)
    return defaults.permission_denied(request, exception)
