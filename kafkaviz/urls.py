from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from kafkaviz.lessons import views
from kafkaviz.live.views import healthz

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("lessons/<slug:slug>/", views.lesson, name="lesson"),
    path("sandbox/", views.lesson, {"slug": "sandbox"}, name="sandbox"),
    path("lab/", include("kafkaviz.lab.urls")),
    path("", include("kafkaviz.classroom.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="classroom/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
