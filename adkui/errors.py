"""Error pages: JSON under /api/ (as DRF words its own errors), HTML elsewhere."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


@csrf_exempt  # nothing is written; a POST to a wrong path is a 404, not Django's HTML CSRF page
def api_route_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any path under /api/ that no API serves, for every method (also with DEBUG on,
    where Django would answer with its HTML debug page)."""
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


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: DRF's JSON 403 under /api/ (a cookie-authenticated write without the token)."""
    if _api(request):
        return JsonResponse({"detail": f"CSRF Failed: {reason}"}, status=403)
    return csrf.csrf_failure(request, reason)
