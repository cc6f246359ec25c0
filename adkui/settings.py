"""adkui settings: one module, driven by environment variables.

Defaults suit local development: SQLite in the project folder and an in-memory
channel layer, so nothing but Python is needed. `DATABASE_URL` switches to
another database (`sqlite:///path` or `postgres://...`), `REDIS_URL` to a Redis
channel layer shared by several worker processes.
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from corsheaders.defaults import default_headers as default_cors_headers
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    return [v.strip() for v in value.split(",") if v.strip()] if value else default


DEBUG = envbool("DEBUG", True)
# Local dev: no login anywhere. Off, every page, API route and websocket needs
# a logged-in user (or an API token). `manage.py up` serves local dev on
# loopback only; set ADKUI_LOCAL_DEV=0 to serve anything wider.
ADKUI_LOCAL_DEV = envbool("ADKUI_LOCAL_DEV", DEBUG)
SECRET_KEY = os.environ.get("SECRET_KEY") or ("adkui-local-dev-only-not-a-secret" if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("Set SECRET_KEY: it is required when DEBUG is off.")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])
CSRF_FAILURE_VIEW = "adkui.errors.csrf_failure"  # JSON under /api/, Django's page elsewhere

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "corsheaders",
    # The house, top to bottom: each app imports only those below it.
    "runtime_app",
    "eval_app",
    "inspector_app",
    "memory_app",
    "sessions_app",
    "access",
    # After the house, so that eval_app's db_worker (django-tasks-db's, importing ADK's evaluation engine
    # from its start) is the one `manage.py db_worker` runs: an app listed earlier overrides a command.
    "django_tasks",
    "django_tasks_db",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Every response gets the Content-Security-Policy (CONTENT_SECURITY_POLICY below).
    "csp.middleware.CSPMiddleware",
    # CORS for ADKUI_CORS_ORIGINS on /api/ only (below); before anything that may answer,
    # so a refusal reaches an allowed origin's page too.
    "corsheaders.middleware.CorsMiddleware",
    "access.middleware.RefuseBadInput",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "access.auth.RoleRequiredUnlessLocalDev",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "adkui.urls"
WSGI_APPLICATION = "adkui.wsgi.application"
ASGI_APPLICATION = "adkui.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # The session page's chat form, with the run options this browser picked.
                "runtime_app.chat.remembered_chat_form",
            ],
        },
    },
    {
        # The timeline's rows and the state panel, a session page's most repeated markup (sessions_app/jinja_env.py),
        # in sessions_app/jinja2/: a jinja2/ folder at the root would be a namespace package on sys.path.
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"environment": "sessions_app.jinja_env.environment"},
    },
]


# Threads (each with its own database connection) that DjangoSessionService's
# async calls run on, so concurrent sessions are written at once (sessions_app.db_threads).
ADKUI_SESSION_THREADS = envint("ADKUI_SESSION_THREADS", 8)
# PostgreSQL: the session service's own statements (append, list, get) are prepared on their
# connection at first use, so the server plans them once (sessions_app._append_sql.Statements; Django's own
# queries never are). Off for a pooler that cannot keep prepared statements (PgBouncer in
# transaction mode before 1.21).
ADKUI_PREPARED_STATEMENTS = envbool("ADKUI_PREPARED_STATEMENTS", True)


def _database(url: str | None) -> dict:
    if not url:
        url = f"sqlite:///{BASE_DIR / 'adkui.sqlite3'}"
    # Persistent connections do not suit ASGI (each request may run in a new
    # thread), so connections are closed per request unless told otherwise.
    config = dj_database_url.parse(url, conn_max_age=envint("DB_CONN_MAX_AGE", 0))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers run beside the writer; IMMEDIATE takes the write lock
        # at BEGIN so concurrent appenders queue on busy_timeout instead of
        # failing with "database is locked" when a read upgrades to a write.
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=20000;",
            "transaction_mode": "IMMEDIATE",
            "timeout": envint("SQLITE_BUSY_TIMEOUT", 30),
        }
    elif config["ENGINE"] == "django.db.backends.postgresql" and not config["CONN_MAX_AGE"] and envbool(
        "DB_POOL", not DEBUG
    ):
        # So instead each worker process keeps a psycopg pool: a request borrows
        # a connection and gives it back, rather than paying a new PostgreSQL
        # backend per request. On in production (DEBUG=0); DB_POOL=0 turns it off.
        # The session service's threads keep one connection each (sessions_app.db_threads): on top of requests' 10.
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 2, "max_size": envint("DB_POOL_MAX_SIZE", 10 + ADKUI_SESSION_THREADS),
            "timeout": envint("DB_POOL_TIMEOUT", 30),
        }
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Django's own (client-binding) cursors never prepare; the session service's
        # server-binding ones prepare each statement the first time their connection runs it
        # (a few statements, each run over and over by every one of the service's threads).
        config.setdefault("OPTIONS", {})["prepare_threshold"] = 0 if ADKUI_PREPARED_STATEMENTS else None
    return config


DATABASES = {"default": _database(os.environ.get("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL")


def redis_channel_layer(url: str) -> dict:
    """The channel layer on the Redis at `url` (tests call it for a Redis of their own)."""
    # Its keys start with ADKUI_CHANNEL_PREFIX: deployments (or test processes)
    # sharing one Redis database keep their groups apart with their own.
    prefix = os.environ.get("ADKUI_CHANNEL_PREFIX") or "asgi"
    # Each websocket consumer waits for its next message with a blocking
    # BZPOPMIN of up to 5 s (channels_redis's RedisChannelLayer.brpop_timeout),
    # and redis-py reads time out after 5 s unless told otherwise: the read
    # gave up just as Redis answered "nothing yet", so every idle websocket was
    # dropped, with an error logged, every 5-10 s. Reads get 10 s: the 5 s
    # wait plus as much again for a slow network or a busy Redis, while a
    # Redis that stops answering still fails a push (logged, never raised)
    # within 10 s. Connecting gets 3 s: a healthy Redis answers in
    # milliseconds, and each push to an unreachable one waits this long.
    # Keepalive lets the kernel in time drop a pooled connection whose peer
    # vanished without closing it (a dead host, a NAT that forgot it). No
    # health-check PING: the pool already replaces a connection Redis closed
    # when it hands it out, and the blocking read itself returns every 5 s.
    host = {"address": url, "socket_timeout": 10, "socket_connect_timeout": 3, "socket_keepalive": True}
    return {"BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [host], "capacity": 1500, "expiry": 30, "prefix": prefix}}


if REDIS_URL:
    CHANNEL_LAYERS = {"default": redis_channel_layer(REDIS_URL)}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve app and project static files without collectstatic (dev, tests);
# production runs collectstatic and gets compressed, hashed files.
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = Path(os.environ.get("ADKUI_MEDIA_ROOT", BASE_DIR / "media"))

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "sessions_app.apis.schema.ApiAutoSchema",  # every error documented, one shape
    "DEFAULT_PARSER_CLASSES": ["access.parsers.LimitedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "access.authentication.SameOriginSessionAuthentication",
        "access.throttles.ThrottledTokenAuthentication",
    ],
    # Roles (access/roles.py): GET needs view, POST/PUT/PATCH edit, DELETE delete.
    "DEFAULT_PERMISSION_CLASSES": ["access.auth.HasRoleUnlessLocalDev"],
    # Requests per client address (anonymous) or per user; wrong API tokens
    # count against the anonymous rate. Off in local dev. An empty value turns
    # a rate off. Counted in the default cache: per worker process.
    "DEFAULT_THROTTLE_CLASSES": ["access.throttles.AnonRateUnlessLocalDev", "access.throttles.UserRateUnlessLocalDev"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("ADKUI_THROTTLE_ANON", "60/min") or None,
        "user": os.environ.get("ADKUI_THROTTLE_USER", "1200/min") or None,
    },
}

# Logins: django-axes locks a username at one address out after
# ADKUI_LOGIN_FAILURES wrong passwords, for ADKUI_LOGIN_COOLOFF_MINUTES (429).
AUTHENTICATION_BACKENDS = [
    "access.backends.LoginLockoutBackend",
    "access.backends.RoleBackend",
]
AXES_FAILURE_LIMIT = envint("ADKUI_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("ADKUI_LOGIN_COOLOFF_MINUTES", 15))
# By username and address together: a guesser elsewhere cannot lock a user out,
# and many users behind one proxy address do not lock each other out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# uvicorn --proxy-headers already puts the client's address in REMOTE_ADDR.
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]

# Content-Security-Policy (django-csp) on every response. No inline script or
# style anywhere: behaviour lives in static/adkui/adkui.js, looks in the CSS
# files. NONCE is only for the API docs page (drf-spectacular's Swagger UI
# starts from an inline script); pages that do not ask for one get no nonce.
# Google's adk-web at /dev-ui/ cannot live with this: its views alone answer
# with the policy it needs (runtime_app.dev_ui.policy).
# 'self' also covers this host's ws:/wss: (CSP level 3), so the live
# websockets need no wider connect-src.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# CORS (django-cors-headers): browsers on these origins (comma-separated, e.g.
# `adk web` serving adk-web elsewhere, pointed at our /api) may call the API.
# Off by default; never for pages. No cookies cross-origin (credentials off):
# with logins on, such a client sends an API token (`Authorization: Token ...`).
CORS_ALLOWED_ORIGINS = envlist("ADKUI_CORS_ORIGINS", [])
CORS_URLS_REGEX = r"^/api/.*$"
CORS_ALLOW_HEADERS = (*default_cors_headers, "x-adk-telemetry-request")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# What a client may send (access.limits): JSON nesting, state (a PATCH delta or
# a new session's initial state) and initial events of a new session.
ADKUI_MAX_JSON_DEPTH = envint("ADKUI_MAX_JSON_DEPTH", 100)
ADKUI_MAX_STATE_BYTES = envint("ADKUI_MAX_STATE_BYTES", 1024 * 1024)
ADKUI_MAX_INITIAL_EVENTS = envint("ADKUI_MAX_INITIAL_EVENTS", 500)
# The largest event JSON the ingest API takes, and Django's own body limit.
ADKUI_MAX_EVENT_BYTES = envint("ADKUI_MAX_EVENT_BYTES", 2 * 1024 * 1024)
# 16 MiB: a 10 MiB artifact arrives base64-encoded in JSON (~13.4 MiB).
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 16 * 1024 * 1024)

if not DEBUG:
    # Production: HTTPS only (behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER).
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    if envbool("BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
SPECTACULAR_SETTINGS = {
    "TITLE": "adkui API",
    "DESCRIPTION": "ADK's api-server routes (sessions, run, run_sse) on Django, plus paginated events, "
                   "state as of an event and event ingest.",
    "VERSION": "0.1.0",
    # 3.1 speaks JSON Schema 2020-12, the dialect of pydantic's schemas of ADK's
    # models, so drf-spectacular's own pydantic support emits them as they are.
    "OAS_VERSION": "3.1.0",
    # Swagger UI from the installed sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The schema and its docs page are API routes like the others: viewers and up.
    "SERVE_PERMISSIONS": ["access.auth.HasRoleUnlessLocalDev"],
}

# Artifacts and long-term memory (memory_app).
ADKUI_MAX_ARTIFACT_BYTES = envint("ADKUI_MAX_ARTIFACT_BYTES", 10 * 1024 * 1024)
ADKUI_MEMORY_MAX_RESULTS = envint("ADKUI_MEMORY_MAX_RESULTS", 10)
# When a session is offloaded to long-term memory: on "reset" (a new chat) and/or
# "timeout" (idle for ADKUI_MEMORY_IDLE_SECONDS); empty to never offload.
ADKUI_MEMORY_OFFLOAD = envlist("ADKUI_MEMORY_OFFLOAD", ["reset", "timeout"])
ADKUI_MEMORY_IDLE_SECONDS = envint("ADKUI_MEMORY_IDLE_SECONDS", 1800)

# The inspector's recorder: every model and tool call of runs adkui starts,
# each stored record capped at ADKUI_RECORDER_MAX_BYTES of JSON.
ADKUI_RECORDER_ENABLED = envbool("ADKUI_RECORDER_ENABLED", True)
ADKUI_RECORDER_MAX_BYTES = envint("ADKUI_RECORDER_MAX_BYTES", 64_000)

# A session's cost (sessions_app.health): USD per million tokens of prompt ("input"),
# output with thinking ("output") and cached prompt ("cached"; default: the input
# rate), by the model name a response carries; a dated, preview or experimental
# build (`gemini-2.5-flash-preview-09-2025`, `-001`) costs what its model costs.
# `*_long` rates apply to prompts over 200k tokens. Responses of a model not named
# here get no cost ("—"). Defaults: Google's Gemini API paid tier, text and image
# input, as published at ai.google.dev/gemini-api/docs/pricing.
ADKUI_MODEL_PRICES = {
    "gemini-3-pro": {"input": 2.00, "output": 12.00, "cached": 0.20,
                     "input_long": 4.00, "output_long": 18.00, "cached_long": 0.40},
    "gemini-3-flash": {"input": 0.50, "output": 3.00, "cached": 0.05},
    "gemini-2.5-pro": {"input": 1.25, "output": 10.00, "cached": 0.125,
                       "input_long": 2.50, "output_long": 15.00, "cached_long": 0.25},
    "gemini-2.5-flash": {"input": 0.30, "output": 2.50, "cached": 0.03},
    "gemini-2.5-flash-lite": {"input": 0.10, "output": 0.40, "cached": 0.01},
    "gemini-2.0-flash": {"input": 0.10, "output": 0.40, "cached": 0.025},
    "gemini-2.0-flash-lite": {"input": 0.075, "output": 0.30},
}

# The folder of ADK agent packages, like `adk web AGENTS_DIR`.
ADKUI_AGENTS_DIR = os.environ.get("ADKUI_AGENTS_DIR", str(BASE_DIR / "runtime_app" / "demo_agents"))

# A chat run started from the session page stops this many seconds after the
# last viewer of the session left (closed or navigated away), unless its
# sender ticked "keep running when I leave".
ADKUI_ORPHAN_RUN_TIMEOUT = envint("ADKUI_ORPHAN_RUN_TIMEOUT", 60)

# runtime_app loads agents and builds Runners; it sits above the feature apps,
# so none of them imports it. The two things they need from it (the agents
# there are; a Runner for one) are named here, as Django names its mail backend.
ADKUI_AGENT_NAMES = "runtime_app.agents.agent_names"
ADKUI_RUNNER_FACTORY = "runtime_app.runners.make_runner"

# LOG_FORMAT=json: one JSON object per line, for log collectors.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {"adk_cache_advice": {"()": "runtime_app.adk_logs.CacheAdviceOncePerAgent"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if os.environ.get("LOG_FORMAT") == "json" else "plain",
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # Each request is logged once, by the server that answered it: daphne's
    # "django.channels.server" under `manage.py up`, "uvicorn.access" in
    # production. Django's own "django" handler (DEBUG only) printed each of
    # daphne's lines a second time beside the root's, and "django.request"
    # repeated every 4xx as a warning: "django" now writes through ours alone,
    # and "django.request" reports only errors (a 5xx, with its traceback).
    # uvicorn's access lines come through ours too, so LOG_FORMAT=json covers them.
    "loggers": {
        "adkui": {"level": os.environ.get("LOG_LEVEL", "INFO")},
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.request": {"level": "ERROR"},
        "uvicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # ADK's context-cache advice once per agent, not once per eval case (runtime_app/adk_logs.py).
        "google_adk.google.adk.runners": {"filters": ["adk_cache_advice"]},
    },
}

# Background work (eval cases) runs as django-tasks on its database backend:
# no broker, SQLite or PostgreSQL, `manage.py db_worker` processes on any number
# of machines (`manage.py up` starts one beside the server).
TASKS = {"default": {"BACKEND": os.environ.get("ADKUI_TASKS_BACKEND", "django_tasks_db.DatabaseBackend")}}
# An eval case whose worker has not beaten its heart for this long (seconds) is
# taken for lost (its worker died) and queued again; workers beat every sixth of it.
ADKUI_EVAL_LEASE_SECONDS = float(os.environ.get("ADKUI_EVAL_LEASE_SECONDS") or 30)
# An infrastructure fault (database gone, ...) is retried with backoff this many
# times before the case is stored as an error naming the fault.
ADKUI_EVAL_MAX_ATTEMPTS = envint("ADKUI_EVAL_MAX_ATTEMPTS", 5)
