"""`/healthz`: is this worker able to serve? Checks the database and the channel layer."""
from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _channel_layer() -> str:
    layer = get_channel_layer()
    if layer is None:
        return "none"

    async def round_trip() -> None:
        channel = await layer.new_channel("healthz.")
        token = uuid.uuid4().hex
        await layer.send(channel, {"type": "healthz", "token": token})
        message = await layer.receive(channel)
        assert message["token"] == token

    async_to_sync(round_trip)()
    return "ok"


@login_not_required
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    for name, check in (("database", _database), ("channel_layer", _channel_layer)):
        try:
            checks[name] = check()
        except Exception as exc:  # a health check reports, it does not crash
            checks[name] = f"error: {type(exc).__name__}: {exc}"
    healthy = all(not v.startswith("error") for v in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unhealthy", **checks}, status=200 if healthy else 503)
