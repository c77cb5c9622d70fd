"""Production-safe defaults: DEBUG off unless asked for, no start without a secret key,
security headers and a Content-Security-Policy on every page, CSRF on forms, no debug
page on errors, HTTPS settings from the environment."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

from kafkaviz.serve import REPO


def settings_in_subprocess(env_overrides: dict[str, str], expr: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_"))}
    env.update(env_overrides, DJANGO_SETTINGS_MODULE="kafkaviz.settings")
    code = f"import django; django.setup(); from django.conf import settings as s; print({expr})"
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def test_debug_is_off_and_a_secret_key_is_required_by_default():
    refused = settings_in_subprocess({}, "s.DEBUG")
    assert refused.returncode != 0 and "DJANGO_SECRET_KEY must be set" in refused.stderr
    ok = settings_in_subprocess({"DJANGO_SECRET_KEY": "x" * 50},
                                "s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.ALLOWED_HOSTS")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "False True True ['127.0.0.1', 'localhost']"


def test_development_conveniences_only_when_asked_for():
    dev = settings_in_subprocess({"DJANGO_DEBUG": "1"}, "s.DEBUG, s.SESSION_COOKIE_SECURE, s.SECRET_KEY[:16]")
    assert dev.returncode == 0 and dev.stdout.strip() == "True False django-insecure-"


def test_https_settings_come_from_the_environment():
    out = settings_in_subprocess({"DJANGO_SECRET_KEY": "x" * 50, "DJANGO_SSL_REDIRECT": "1",
                                  "DJANGO_HSTS_SECONDS": "31536000", "DJANGO_BEHIND_TLS_PROXY": "1",
                                  "DJANGO_ALLOWED_HOSTS": "demo.example.org",
                                  "DJANGO_CSRF_TRUSTED_ORIGINS": "https://demo.example.org"},
                                 "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER, "
                                 "s.ALLOWED_HOSTS, s.CSRF_TRUSTED_ORIGINS")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https') ['demo.example.org'] "
                                  "['https://demo.example.org']")


def test_the_test_suite_runs_with_production_defaults():
    assert settings.DEBUG is False and settings.SESSION_COOKIE_SECURE


@pytest.mark.parametrize("path", ["/", "/lessons/segments/", "/lessons/leader-epoch/"])
def test_pages_carry_security_headers_and_a_strict_csp(path):
    response = Client().get(path)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'",
                      "frame-ancestors 'none'"):
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    # Nothing inline that the policy would block.
    html = response.content.decode()
    assert "<script>" not in html and "<style" not in html and " style=" not in html and " onclick=" not in html


def test_a_post_without_a_csrf_token_is_refused():
    client = Client(enforce_csrf_checks=True)
    assert client.post("/lessons/segments/", {"x": "1"}).status_code == 403


def test_errors_do_not_show_the_debug_page():
    response = Client().get("/lessons/no-such-lesson/")
    assert response.status_code == 404
    assert b"URLconf" not in response.content and b"Traceback" not in response.content


def test_session_cookie_is_signed_secure_and_http_only():
    response = Client().get("/lessons/segments/")
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Lax"


def manage_in_subprocess(env_overrides: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_"))}
    env.update(env_overrides)
    return subprocess.run([sys.executable, "manage.py", *argv], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


def test_management_commands_that_serve_nothing_run_without_a_secret_key():
    checked = manage_in_subprocess({}, "check")
    assert checked.returncode == 0, checked.stderr
    lab = manage_in_subprocess({}, "lab", "sweep", "--help")
    assert lab.returncode == 0 and "--preset" in lab.stdout, lab.stderr


@pytest.mark.parametrize("argv", [["runserver", "127.0.0.1:0"], ["runworker", "kafkaviz-test"]])
def test_serving_commands_still_refuse_to_start_without_a_secret_key(argv):
    refused = manage_in_subprocess({}, *argv)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: DJANGO_SECRET_KEY must be set") and "Traceback" not in refused.stderr


def test_the_asgi_application_refuses_to_load_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_"))}
    refused = subprocess.run([sys.executable, "-c", "import kafkaviz.asgi"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "DJANGO_SECRET_KEY must be set" in refused.stderr
