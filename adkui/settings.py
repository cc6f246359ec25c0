"""adkui settings: one module, driven by environment variables.

Defaults suit local development: SQLite in the project folder and an in-memory
channel layer, so nothing but Python is needed. `DATABASE_URL` switches to
another database (`sqlite:///path` or `postgres://...`), `REDIS_URL` to a Redis
channel layer shared by several worker processes.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

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
SECRET_KEY = os.environ.get("SECRET_KEY", "adkui-local-dev-only-not-a-secret")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

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
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "sessions_app",
    "memory_app",
    "eval_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
            ],
        },
    },
]


def _database(url: str | None) -> dict:
    if not url:
        url = f"sqlite:///{BASE_DIR / 'adkui.sqlite3'}"
    config = dj_database_url.parse(url, conn_max_age=0 if url.startswith("sqlite") else 60)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers run beside the writer; IMMEDIATE takes the write lock
        # at BEGIN so concurrent appenders queue on busy_timeout instead of
        # failing with "database is locked" when a read upgrades to a write.
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=20000;",
            "transaction_mode": "IMMEDIATE",
            "timeout": envint("SQLITE_BUSY_TIMEOUT", 30),
        }
        # A file, not :memory:, so that the test server, worker threads and
        # child processes of the tests all see one database.
        config["TEST"] = {"NAME": os.environ.get("SQLITE_TEST_NAME", str(BASE_DIR / "adkui-test.sqlite3"))}
    return config


DATABASES = {"default": _database(os.environ.get("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 1500, "expiry": 30},
        }
    }
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
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "adkui API",
    "DESCRIPTION": "ADK's api-server routes (sessions, run, run_sse) on Django, plus paginated events, "
                   "state as of an event and event ingest.",
    "VERSION": "0.1.0",
    # Swagger UI from the installed sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The folder of ADK agent packages, like `adk web AGENTS_DIR`.
ADKUI_AGENTS_DIR = os.environ.get("ADKUI_AGENTS_DIR", str(BASE_DIR / "adkui" / "demo_agents"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
