from django.urls import path, re_path

from . import views

app_name = "classroom"

urlpatterns = [
    path("rooms/", views.rooms_home, name="rooms"),
    path("rooms/new/", views.room_new, name="new"),
    path("rooms/join/", views.join, name="join"),
    re_path(r"^rooms/(?P<code>[A-Z0-9]{8})/$", views.room_page, name="room"),
    re_path(r"^rooms/(?P<code>[A-Z0-9]{8})/present/$", views.room_present, name="present"),
    re_path(r"^rooms/(?P<code>[A-Z0-9]{8})/close/$", views.room_close, name="close"),
    re_path(r"^rooms/(?P<code>[A-Z0-9]{8})/export\.json$", views.room_export, name="export"),
    re_path(r"^r/(?P<code>[A-Za-z0-9-]{1,16})$", views.short, name="short"),
]
