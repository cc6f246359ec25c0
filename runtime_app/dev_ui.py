"""Google's adk-web (the dev UI inside the google-adk wheel) at /dev-ui/, talking to our /api.

adk-web is an Angular app built with `<base href="./">`: at /dev-ui/ it loads its
scripts from /dev-ui/ and its settings from ./assets/config/runtime-config.json,
which we answer with our API's address, as ADK's server answers with its own.
Its files are served from the installed wheel by WhiteNoise (ETags, ranges,
long caching of Angular's hashed chunk names), with DEBUG on or off.

adk-web needs what our Content-Security-Policy forbids everywhere else: Angular
writes inline styles, the page loads Google's fonts, its index starts the
stylesheet with an inline `onload` handler, and its graph renderer compiles
WebAssembly. These views, and only these, answer with a policy allowing that
much and no more: the index's own inline handlers and scripts by hash, no
inline script otherwise, no eval (zod, its validator, tries `new Function`
once to see whether it may; refused, it validates without).

Three things are added to what the wheel ships (files in static/adkui/dev_ui/,
see its SOURCES.txt): the two Prism themes adk-web links but the wheel lacks,
its two icon fonts served from here (declared after the index's own
@font-face rules, so they win and the icons draw without Google's servers),
and a link back to adkui.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import google.adk.cli
from csp.constants import NONE, SELF
from csp.decorators import csp_replace
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.urls import path, reverse
from django.views.decorators.http import require_safe
from whitenoise.base import WhiteNoise
from whitenoise.middleware import WhiteNoiseMiddleware

PREFIX = "/dev-ui/"
BUNDLE = Path(google.adk.cli.__file__).resolve().parent / "browser"
OURS = Path(settings.BASE_DIR) / "static" / "adkui" / "dev_ui"
# Before </head>: the icon fonts, last, so these rules win over the index's own
# (the same families on Google's servers). Before </body>: the way back.
_HEAD_ADDITIONS = """<style>
@font-face{font-family:'Material Icons';font-style:normal;font-weight:400;font-display:block;
  src:url(./fonts/material-icons-latin-400-normal.woff2) format('woff2')}
@font-face{font-family:'Material Symbols Outlined';font-style:normal;font-weight:400;font-display:block;
  src:url(./fonts/material-symbols-outlined-latin-400-normal.woff2) format('woff2')}
#adkui-back{position:fixed;left:8px;bottom:8px;z-index:10000;padding:3px 10px;border-radius:12px;
  font:12px/1.6 system-ui,sans-serif;background:#202124;color:#fff;text-decoration:none;opacity:.85}
#adkui-back:hover{opacity:1}
</style>
"""
GOOGLE_FONTS = ["https://fonts.googleapis.com", "https://fonts.gstatic.com"]
# Angular's output names: main-KCUV4MHY.js, chunk-25OK43GT.js, styles-4R3GDHUZ.css.
HASHED_NAME = r"-[0-9A-Z]{8}\.(js|css)$"

_INLINE_HANDLER = re.compile(r"""\son[a-z]+\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)


@functools.cache
def _files() -> WhiteNoise:
    return WhiteNoise(None, root=str(BUNDLE), prefix=PREFIX, immutable_file_test=HASHED_NAME)


@functools.cache
def _our_files() -> WhiteNoise:
    return WhiteNoise(None, root=str(OURS), prefix=PREFIX)


@functools.cache
def _wheel_index_html() -> bytes:
    return (BUNDLE / "index.html").read_bytes()


@functools.cache
def _index_html() -> bytes:
    """The wheel's index with our fonts and the link back to adkui (no script or handler added)."""
    html = _wheel_index_html().decode("utf-8")
    back = f'<a id="adkui-back" href="{reverse("runtime:app_list")}" title="back to adkui">← adkui</a>\n'
    html = html.replace("</head>", _HEAD_ADDITIONS + "</head>", 1).replace("</body>", back + "</body>", 1)
    return html.encode("utf-8")


def _sha256(text: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"


@functools.cache
def policy() -> dict[str, list[str]]:
    """The Content-Security-Policy of /dev-ui/: what adk-web needs, read from its own index."""
    html = _index_html().decode("utf-8", errors="replace")
    handlers = [a or b for a, b in _INLINE_HANDLER.findall(html)]
    scripts = [body for body in _INLINE_SCRIPT.findall(html) if body.strip()]
    hashes = sorted({_sha256(text) for text in [*handlers, *scripts]})
    return {
        "default-src": [SELF],
        # 'unsafe-hashes': the index's inline handlers, each by its hash; wasm: the graph renderer.
        "script-src": [SELF, "'wasm-unsafe-eval'", *(["'unsafe-hashes'", *hashes] if hashes else [])],
        "style-src": [SELF, "'unsafe-inline'", GOOGLE_FONTS[0]],
        "font-src": [SELF, "data:", GOOGLE_FONTS[1]],
        "img-src": [SELF, "data:", "blob:"],
        "media-src": [SELF, "data:", "blob:"],
        "connect-src": [SELF],
        "worker-src": [SELF, "blob:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }


def adk_web_policy(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """django-csp's `csp_replace` with `policy()`, which is read from the index on first use."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return csp_replace(policy())(view)(request, *args, **kwargs)

    return wrapped


@require_safe
@adk_web_policy
def index(request: HttpRequest) -> HttpResponseBase:
    """adk-web's page, as the wheel ships it; each visit reads its config afresh (no-store)."""
    response = HttpResponse(_index_html(), content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_safe
@adk_web_policy
def runtime_config(request: HttpRequest) -> HttpResponseBase:
    """What ADK's server writes into this file: where the API is (the root /api/version sits
    in), and the telemetry consent (off: see runtime_app.apis.TelemetryApi)."""
    api = request.build_absolute_uri(reverse("runtime_api:version")).rpartition("/")[0]
    response = JsonResponse({"backendUrl": api, "telemetry": False})
    response["Cache-Control"] = "no-store"
    return response


@login_not_required  # the wheel's public files, as /static/ is; the page and its config need a login
@require_safe
@adk_web_policy
def asset(request: HttpRequest, name: str) -> HttpResponseBase:
    # The wheel's own file first: if a later wheel ships a Prism theme, it is the one meant.
    static_file = _files().files.get(PREFIX + name) or _our_files().files.get(PREFIX + name)
    if static_file is None:
        raise Http404(f"adk-web has no file {name!r}.")
    return WhiteNoiseMiddleware.serve(static_file, request)


app_name = "dev_ui"
urlpatterns = [
    path("", index, name="index"),
    path("assets/config/runtime-config.json", runtime_config, name="runtime-config"),
    path("<path:name>", asset, name="asset"),
]
