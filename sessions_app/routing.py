from __future__ import annotations

from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/sessions/<int:pk>/events/", consumers.SessionEventsConsumer.as_asgi()),
    path("ws/apps/<int:pk>/sessions/", consumers.AppSessionsConsumer.as_asgi()),
]
