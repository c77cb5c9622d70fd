from django.contrib import admin
from django.urls import include, path

from kafkaviz.lessons import views
from kafkaviz.live.views import healthz

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("lessons/<slug:slug>/", views.lesson, name="lesson"),
    path("sandbox/", views.lesson, {"slug": "sandbox"}, name="sandbox"),
    path("lab/", include("kafkaviz.lab.urls")),
    path("admin/", admin.site.urls),
    path("", include("kafkaviz.classroom.urls")),
]
