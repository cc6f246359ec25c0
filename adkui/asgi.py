from __future__ import annotations

import gc
import os

# No collection while the application loads: what it imports lives as long as the
# process (frozen below), so each full collection walked a heap of long-lived
# objects growing to some 600 000 for nothing (91 freed): about a third of the
# server's start in CPU (bench/startup_bench.py's `import adkui.asgi`).
collecting = gc.isenabled()
gc.disable()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import get_resolver  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adkui.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from eval_app.routing import websocket_urlpatterns as eval_websockets  # noqa: E402
from lazy_imports import load_views  # noqa: E402
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

# Django imports the URLconf when the first request arrives, and the URLconf
# names its views without importing them (lazy_imports.py: so that the
# checks and commands need not import ADK): that request would wait for every
# view and API module, ADK's core and google-genai with them (seconds), and the
# objects they make would escape the freeze below. Import them all now.
load_views(get_resolver())

# Everything imported so far (Django, ADK, the apps: some 600 000 objects) lives
# as long as the process. Out of the collector's sight, a full collection no
# longer walks them all: that walk paused every request in flight for about
# half a second (the p99 of bench/http_bench.py).
gc.freeze()
if collecting:
    gc.enable()
