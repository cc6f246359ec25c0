from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from eval_app.routing import websocket_urlpatterns as eval_websockets  # noqa: E402
from runtime_app.routing import websocket_urlpatterns as runtime_websockets  # noqa: E402
from sessions_app.routing import websocket_urlpatterns as session_websockets  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(session_websockets + eval_websockets + runtime_websockets))
        ),
    }
)

# Django imports the URLconf, and with it every view and API module (ADK's
# graph builder and CLI helpers among them, about a second), when the first
# request arrives: that request waited, and the objects it imported escaped
# the freeze below. Import it now.
get_resolver().url_patterns  # noqa: B018 (a cached property: reading it imports)

# Everything imported so far (Django, ADK, the apps: some 600 000 objects) lives
# as long as the process. Out of the collector's sight, a full collection no
# longer walks them all: that walk paused every request in flight for about
# half a second (the p99 of bench/http_bench.py).
gc.freeze()
