from __future__ import annotations

from django.urls import path

from .consumers import EvalRunConsumer

websocket_urlpatterns = [
    path("ws/evals/runs/<int:pk>/", EvalRunConsumer.as_asgi()),
]
