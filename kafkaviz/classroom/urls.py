from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

app_name = "classroom"

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(template_name="classroom/login.html",
                                                         redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("rooms/new", views.new_room, name="new"),
    path("rooms/join", views.join, name="join"),
    path("r/<str:code>", views.room_page, name="join_code"),
    path("r/<str:code>/", views.room_page, name="room"),
    path("rooms/<str:code>/present", views.present, name="present"),
    path("rooms/<str:code>/close", views.close, name="close"),
]
