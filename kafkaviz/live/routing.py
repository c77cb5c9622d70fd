from django.urls import path

from .consumers import LessonConsumer

websocket_urlpatterns = [
    path("ws/lessons/<slug:slug>/", LessonConsumer.as_asgi()),
]
