"""ASGI entry point: HTTP goes to Django, WebSockets to the live app.

WebSockets pass the origin check (scheme, host and port: only this site's own pages,
kafkaviz/live/origin.py; cross-site pages cannot open a socket with the visitor's cookie) and get the session, which holds the
visitor's sandbox ids (and, for rooms, the instructor's login: the room consumer
reads it from the session itself, so lesson sockets never touch the database).
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.sessions import SessionMiddlewareStack  # noqa: E402

from kafkaviz.classroom.routing import websocket_urlpatterns as room_urlpatterns  # noqa: E402
from kafkaviz.live.origin import SameOriginValidator  # noqa: E402
from kafkaviz.live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": SameOriginValidator(SessionMiddlewareStack(
        URLRouter(websocket_urlpatterns + room_urlpatterns))),
})

if os.environ.get("KAFKAVIZ_ACCESS_LOG") == "1":
    # One JSON line per request and socket (make serve-prod; daphne's text log is off there).
    from kafkaviz.accesslog import AccessLog  # noqa: E402

    application = AccessLog(application)
