"""The WebSocket origin check: a socket is opened only by a page of this site.

Channels' ``AllowedHostsOriginValidator`` compares the ``Origin``'s host with
``ALLOWED_HOSTS`` and ignores its scheme and port, so a page served by anything else on an
allowed host (``http://localhost:9999``) could open a socket with the visitor's cookie.
Here the whole origin counts -- scheme, host and port: it must be the socket's own site
(the ``Host`` the browser connected to and its port; ``http`` for ``ws`` and ``https`` for
``wss`` when the server names the scheme, and ``https`` behind a TLS proxy), on an allowed host, or be listed in
``CSRF_TRUSTED_ORIGINS``. A client that sends no ``Host`` (never a browser: HTTP/1.1
requires one) is held to the host-only check.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

__all__ = ["SameOriginValidator", "origin_allowed"]

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(text: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def origin_allowed(scope: dict[str, Any]) -> bool:
    text = _header(scope, b"origin")
    origin = _origin(text) if text else None
    if origin is None:
        return False
    scheme, host, port = origin
    if any(_origin(trusted) == origin for trusted in settings.CSRF_TRUSTED_ORIGINS):
        return True
    if not validate_host(host, settings.ALLOWED_HOSTS):
        return False
    host_header = _header(scope, b"host")
    if host_header is None:
        return True                                     # no Host to compare with: the host check alone
    own_host, own_port = split_domain_port(host_header.lower())
    # Daphne's scope names no scheme: then either, since one host and port serve one of them.
    schemes = {"wss": {"https"}, "ws": {"http"}}.get(scope.get("scheme"), {"http", "https"})
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        schemes.add("https")                            # TLS ends at the proxy in front of us
    if scheme not in schemes or host != own_host:
        return False
    return port == (int(own_port) if own_port else DEFAULT_PORTS[scheme])


class SameOriginValidator:
    """ASGI middleware: a WebSocket whose origin is not this site's is denied (403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
