"""Django settings for kafkaviz.

Production-safe by default; everything a deployment changes comes from the
environment (README, "Production"; docs/web.md, "Settings"):

* ``DJANGO_DEBUG`` ("0" by default; ``make run`` sets "1" for local development)
* ``DJANGO_SECRET_KEY`` (required when DEBUG is off: the server refuses to start without it;
  ``manage.py`` commands that serve nothing, e.g. ``lab`` or ``migrate``, get a throwaway
  per-process key instead, see ``manage.py``'s ``SERVING_COMMANDS``)
* ``DJANGO_ALLOWED_HOSTS`` (comma separated; also the WebSocket origin allow-list)
* ``DJANGO_CSRF_TRUSTED_ORIGINS`` (comma separated, e.g. ``https://demo.example.org``)
* ``DJANGO_SECURE_COOKIES`` (secure session/CSRF cookies; on unless DEBUG)
* ``DJANGO_SSL_REDIRECT``, ``DJANGO_HSTS_SECONDS``, ``DJANGO_BEHIND_TLS_PROXY`` (HTTPS; off by default)
* ``DATABASE_URL`` (dj-database-url syntax; SQLite in the project directory otherwise)
* ``REDIS_URL`` (use channels-redis so several ASGI processes share groups; in-memory otherwise)
* ``KAFKAVIZ_DATA_DIR`` (root of the sandboxes' data directories; a temp dir otherwise)
* ``KAFKAVIZ_STATIC_MANIFEST`` ("1" after ``collectstatic`` to serve hashed, compressed files)
* ``KAFKAVIZ_LOG_FORMAT`` ("json", the default, or "text"), ``KAFKAVIZ_LOG_LEVEL``
* ``KAFKAVIZ_*`` runtime limits, see ``KAFKAVIZ_RUNTIME`` below
"""
from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

import kafkaviz

BASE_DIR = Path(__file__).resolve().parent.parent


def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def _list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


DEBUG = _flag("DJANGO_DEBUG", "0")

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = "django-insecure-kafkaviz-local-development-only"
    elif getattr(kafkaviz, "SERVES_NOTHING", False):
        # manage.py lab/migrate/createinstructor/…: nothing signed here outlives the process.
        SECRET_KEY = secrets.token_urlsafe(50)
    else:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DEBUG is off (the default). For local development run "
            "`make run`, or set DJANGO_DEBUG=1.")

ALLOWED_HOSTS = _list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = _list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so `runserver` is the ASGI one
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "template_partials",
    "csp",
    "kafkaviz.lessons",
    "kafkaviz.live",
    "kafkaviz.lab",
    "kafkaviz.classroom",
    "axes",   # the login rate limit (kafkaviz/classroom/lockout.py)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "kafkaviz.live.middleware.BusyMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",   # last, as django-axes asks: turns a lock-out into its page
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
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    # Under ASGI each request may run in a different thread: Django's advice is no
    # persistent connections (DJANGO_CONN_MAX_AGE to change it, with a pooler in front).
    "default": dj_database_url.config(default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
                                      conn_max_age=_int("DJANGO_CONN_MAX_AGE", 0), conn_health_checks=True),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Instructor accounts (rooms): Django auth; students join rooms without an account.
LOGIN_URL = "classroom:login"
LOGIN_REDIRECT_URL = "home"
# Django's standard checks, applied by ``manage.py createinstructor`` and the admin's password
# forms (an instructor's password opens every room they run).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login rate limit (django-axes; kafkaviz/classroom/lockout.py): wrong passwords counted per
# username and per client address, each on its own; at the limit either is locked for the
# cool-off, the right password included. Attempts are database rows (any process, any database).
AUTHENTICATION_BACKENDS = ["kafkaviz.classroom.lockout.LoginGuardBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = _int("KAFKAVIZ_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=_int("KAFKAVIZ_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# Failures are not wiped by a successful login (AXES_RESET_ON_SUCCESS stays off): wiping deletes
# every attempt from that address, so logging into one's own account would reset a guesser's count.
AXES_LOCKOUT_CALLABLE = "kafkaviz.classroom.lockout.locked_out"
AXES_VERBOSE = False

# Sessions only hold the ids of a visitor's sandboxes. Signed cookies need no database
# round trip on every WebSocket connect, and the signature stops a client from
# choosing (guessing) someone else's sandbox id.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _flag("DJANGO_SECURE_COOKIES", "0" if DEBUG else "1")
CSRF_COOKIE_HTTPONLY = True

# ---- HTTP security headers ------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = _flag("DJANGO_SSL_REDIRECT", "0")
SECURE_HSTS_SECONDS = _int("DJANGO_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", "0")
SECURE_HSTS_PRELOAD = _flag("DJANGO_HSTS_PRELOAD", "0")
if _flag("DJANGO_BEHIND_TLS_PROXY", "0"):
    # Only behind a proxy that sets this header itself (and strips it from clients).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp): only our own files; no inline script or
# style, no eval, no plugins, not framed. 'self' covers the same-origin WebSocket.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

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

# A share link (a stored run) is refused and deleted once it is this many days old;
# `manage.py purge_shares` deletes the expired ones in bulk (run it daily from cron).
KAFKAVIZ_SHARE_DAYS = _int("KAFKAVIZ_SHARE_DAYS", 30)
# New runs one visitor (a session, or a room member) and one client address may store per day
# (kafkaviz/live/shares.py; 0: no limit). Sharing a run already stored returns its link and costs nothing.
KAFKAVIZ_SHARES_PER_VISITOR = _int("KAFKAVIZ_SHARES_PER_VISITOR", 30)
KAFKAVIZ_SHARES_PER_ADDRESS = _int("KAFKAVIZ_SHARES_PER_ADDRESS", 200)

_MAX_RUN_BYTES = 64 * 1024

# "Connect your own client" (docs/web.md): the sandbox starts a Kafka wire-protocol listener
# of its own cluster, one port per broker. On under DEBUG (`make run`); in hosted mode (DEBUG
# off) only when the operator names a port range, KAFKAVIZ_CLIENT_PORTS="20000-20999", which
# then also bounds how many listeners run at once. KAFKAVIZ_CLIENT_HOST is the address the
# listeners bind and advertise in Metadata (loopback unless the operator says otherwise).
KAFKAVIZ_CLIENT_LISTENER = {
    "ENABLED": DEBUG or bool(os.environ.get("KAFKAVIZ_CLIENT_PORTS", "").strip()),
    "PORTS": os.environ.get("KAFKAVIZ_CLIENT_PORTS", "").strip(),
    "HOST": os.environ.get("KAFKAVIZ_CLIENT_HOST", "127.0.0.1"),
    "MAX_LISTENERS": _int("KAFKAVIZ_CLIENT_MAX_LISTENERS", 20),       # per process
    "MAX_CONNECTIONS_PER_ADDRESS": _int("KAFKAVIZ_CLIENT_CONNECTIONS_PER_ADDRESS", 20),   # per listener
    "REQUESTS_PER_SECOND_PER_ADDRESS": _int("KAFKAVIZ_CLIENT_REQUESTS_PER_SECOND", 500),
    "IDLE_MS": _int("KAFKAVIZ_CLIENT_IDLE_MS", 600_000),              # connections.max.idle.ms
}

KAFKAVIZ_RUNTIME = {
    # Pacing: the first frame after a quiet spell leaves at once; during a burst at most
    # one frame per this many ms leaves (about a display's pace).
    "FRAME_INTERVAL_MS": _int("KAFKAVIZ_FRAME_INTERVAL_MS", 30),
    # Events carried by one frame; the rest are counted as skipped (the state is always whole).
    "MAX_EVENTS_PER_FRAME": 200,
    # A frame carries a diff against the last whole state; a whole state every this many frames.
    "FULL_STATE_EVERY": 20,
    # Per process, and per client address (0: no cap; raise it for a class behind one NAT).
    "MAX_SANDBOXES": _int("KAFKAVIZ_MAX_SANDBOXES", 200),
    "MAX_SANDBOXES_PER_ADDRESS": _int("KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS", 8),
    "MAX_CONNECTIONS_PER_ADDRESS": _int("KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS", 16),
    # A sandbox nobody has watched for this long is closed and its files removed,
    # by a background task every REAP_EVERY_SECONDS, REAP_BATCH at a time.
    "IDLE_SECONDS": _int("KAFKAVIZ_IDLE_SECONDS", 90),
    "REAP_EVERY_SECONDS": 10,
    # What a socket holds (its place in the address's quota, its watch on a sandbox, a room
    # member's presence) is a lease its process renews every quarter of this while the socket
    # lives: one whose close never ran lets go within this long (kafkaviz/live/leases.py).
    "LEASE_SECONDS": _int("KAFKAVIZ_LEASE_SECONDS", 20),
    "REAP_BATCH": 25,
    # Per-sandbox quotas (raised only by tests that need a big burst; keep these in production).
    "MAX_MESSAGES": _int("KAFKAVIZ_MAX_MESSAGES", 5000),
    "MAX_DISK_BYTES": _int("KAFKAVIZ_MAX_DISK_BYTES", 5 * 1024 * 1024),
    "MAX_MESSAGES_PER_COMMAND": _int("KAFKAVIZ_MAX_MESSAGES_PER_COMMAND", 50),  # one produce of lesson 2
    # A learner holding an arrow key steps ~20 times a second; each step is a bounded command
    # (a replay from the nearest checkpoint), and MAX_QUEUED_COMMANDS still caps the backlog.
    "COMMANDS_PER_SECOND": 20.0,
    "COMMAND_BURST": 40,
    "MAX_QUEUED_COMMANDS": 4,   # commands waiting for one sandbox; more are refused, not queued
    # Per room member (sync, export, share, and a granted student's commands): never the
    # sandbox's budget above, which stays the instructor's.
    "MEMBER_COMMANDS_PER_SECOND": 10.0,
    "MEMBER_COMMAND_BURST": 20,
    "MEMBER_MAX_QUEUED": 2,
    # Per connection.
    "CONNECTION_COMMANDS_PER_SECOND": 20.0,
    "CONNECTION_COMMAND_BURST": 40,
    "INVALID_PER_SECOND": 2.0,  # invalid messages answered; past the burst they are dropped
    "INVALID_BURST": 10,
    "INVALID_CLOSE_AFTER": 200,  # dropped invalid messages in a row before the socket is closed
    # An exported run (a run file to import, a share, a room's starting run): the one limit, read
    # wherever it is enforced or shown (the import command and the room form, the share checks,
    # the page's file picker and its message).
    "MAX_RUN_BYTES": _MAX_RUN_BYTES,
    # A WebSocket message from the browser. It must carry an imported run file whole: sending it
    # as a JSON string doubles at most every character of a valid JSON file (a quote, backslash
    # or newline), and the command around it is small.
    "MAX_MESSAGE_BYTES": 2 * _MAX_RUN_BYTES + 4096,
}

# Rooms (kafkaviz/classroom): wrong join codes one client address may send per minute
# before every join from it is refused for the rest of that minute; students per room and
# per address in a room.
KAFKAVIZ_ROOMS = {
    "JOIN_FAILURES_PER_MINUTE": _int("KAFKAVIZ_JOIN_FAILURES_PER_MINUTE", 10),
    "MAX_MEMBERS": _int("KAFKAVIZ_ROOM_MAX_MEMBERS", 300),   # students one room admits
    # Students one client address may add to one room (0: no limit). A class behind one
    # school NAT shares an address: raise it for a bigger class on one network.
    "JOINS_PER_ADDRESS": _int("KAFKAVIZ_ROOM_JOINS_PER_ADDRESS", 60),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "kafkaviz.jsonlog.JsonFormatter"},
                   "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler",
                             "formatter": "text" if os.environ.get("KAFKAVIZ_LOG_FORMAT") == "text" else "json"}},
    "loggers": {
        "kafkaviz": {"handlers": ["console"], "level": os.environ.get("KAFKAVIZ_LOG_LEVEL", "INFO"),
                     "propagate": False},   # daphne configures the root logger too: one line each, not two
        "django": {"handlers": ["console"], "level": "WARNING"},
    },
}
