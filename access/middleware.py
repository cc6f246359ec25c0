"""Refuse what no view should see: unstorable text in the path or query string,
and bodies too large or sent without a length."""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from .limits import InputError, TooLargeError, check_text

BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def refusal(request: HttpRequest, error: InputError, status: int = 400) -> HttpResponse:
    """A 4xx naming the field: JSON as DRF words it under /api/, plain text elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({error.field: [error.message]}, status=status)
    return HttpResponse(f"{error}\n", status=status, content_type="text/plain; charset=utf-8")


class RefuseBadInput:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            _check_url(request)
            _read_unsized_body(request)
        except InputError as error:
            return refusal(request, error, 413 if isinstance(error, TooLargeError) else 400)
        return self.get_response(request)


def _check_url(request: HttpRequest) -> None:
    check_text(request.path, "path")
    for key, values in request.GET.lists():
        check_text(key, "query")
        for value in values:
            check_text(value, key)


def _read_unsized_body(request: HttpRequest) -> None:
    """A chunked body has no Content-Length, and DRF takes a body without one for
    empty: read it here, hold it to the same cap, and give it its length."""
    if request.method not in BODY_METHODS or request.META.get("CONTENT_LENGTH"):
        return
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        body = request.body  # Django measures a chunked ASGI body against the limit itself
    except RequestDataTooBig:
        raise TooLargeError("body", f"may be at most {limit} bytes.") from None
    if limit is not None and len(body) > limit:  # a server that buffered it unmeasured
        raise TooLargeError("body", f"may be at most {limit} bytes; this one is {len(body)}.")
    request.META["CONTENT_LENGTH"] = str(len(body))
