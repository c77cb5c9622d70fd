from channels.auth import AuthMiddleware
from django.urls import re_path

from .consumers import RoomConsumer

# Only room sockets look the signed-in user up (one database read per connect); lesson
# sockets need the session alone.
websocket_urlpatterns = [
    re_path(r"^ws/rooms/(?P<code>[A-Z0-9]{8})/$", AuthMiddleware(RoomConsumer.as_asgi())),
]
