"""Django settings for kafkaviz.

Everything a deployment changes comes from the environment:

* ``DJANGO_DEBUG`` ("1" by default for local runs; set "0" in production)
* ``DJANGO_SECRET_KEY`` (required when DEBUG is off)
* ``DJANGO_ALLOWED_HOSTS`` (comma separated; also the WebSocket origin allow-list)
* ``DATABASE_URL`` (dj-database-url syntax; SQLite in the project directory otherwise)
* ``REDIS_URL`` (use channels-redis so several ASGI processes share groups; in-memory otherwise)
* ``KAFKAVIZ_DATA_DIR`` (root of the sandboxes' data directories; a temp dir otherwise)
* ``KAFKAVIZ_STATIC_MANIFEST`` ("1" after ``collectstatic`` to serve hashed, compressed files)
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


DEBUG = _flag("DJANGO_DEBUG", "1")

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
    SECRET_KEY = "django-insecure-kafkaviz-local-development-only"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get(
    "DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()]

INSTALLED_APPS = [
    "daphne",  # first, so `runserver` is the ASGI one
    "django.contrib.staticfiles",
    "channels",
    "template_partials",
    "kafkaviz.lessons",
    "kafkaviz.live",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kafkaviz.urls"
ASGI_APPLICATION = "kafkaviz.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.static",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=60),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Sessions only hold the ids of a visitor's sandboxes. Signed cookies need no database
# round trip on every WebSocket connect, and the signature stops a client from
# choosing (guessing) someone else's sandbox id.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG

if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["REDIS_URL"]], "capacity": 50, "expiry": 30},
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 50, "expiry": 30}}
    }

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if _flag("KAFKAVIZ_STATIC_MANIFEST", "0")
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Without collectstatic, WhiteNoise serves straight from the app/static dirs.
WHITENOISE_USE_FINDERS = not _flag("KAFKAVIZ_STATIC_MANIFEST", "0")
WHITENOISE_AUTOREFRESH = DEBUG

LANGUAGE_CODE = "en"
# The lesson pages pick their language from ?lang= (en | zh); UI strings are translated
# through locale/<lang>/LC_MESSAGES/django.po (compiled .mo files are committed; `make messages`
# rebuilds them).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# ---- kafkaviz -------------------------------------------------------------
KAFKAVIZ_DATA_DIR = os.environ.get("KAFKAVIZ_DATA_DIR") or os.path.join(tempfile.gettempdir(), "kafkaviz-data")

KAFKAVIZ_RUNTIME = {
    # Frames leave a sandbox at most once per this many ms (live mode).
    "FRAME_INTERVAL_MS": int(os.environ.get("KAFKAVIZ_FRAME_INTERVAL_MS", "100")),
    # Events carried by one frame; the rest are counted as skipped (the state is always whole).
    "MAX_EVENTS_PER_FRAME": 200,
    "MAX_SANDBOXES": int(os.environ.get("KAFKAVIZ_MAX_SANDBOXES", "200")),
    "IDLE_SECONDS": int(os.environ.get("KAFKAVIZ_IDLE_SECONDS", "1800")),
    "REAP_EVERY_SECONDS": 60,  # how often idle sandboxes are looked for (0: only on attach/detach)
    # Per-sandbox quotas.
    "MAX_MESSAGES": 5000,
    "MAX_DISK_BYTES": 5 * 1024 * 1024,
    "COMMANDS_PER_SECOND": 8.0,
    "COMMAND_BURST": 20,
    "MAX_MESSAGE_BYTES": 70_000,  # a WebSocket message from the browser (an imported run file: 64 KB)
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"kafkaviz": {"handlers": ["console"], "level": os.environ.get("KAFKAVIZ_LOG_LEVEL", "INFO")}},
}
