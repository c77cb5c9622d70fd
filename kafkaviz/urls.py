from django.contrib import admin
from django.urls import include, path

from kafkaviz.lessons import views
from kafkaviz.live.views import healthz, lesson

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("lessons/<slug:slug>/", lesson, name="lesson"),
    path("sandbox/", lesson, {"slug": "sandbox"}, name="sandbox"),
    path("lab/", include("kafkaviz.lab.urls")),
    path("admin/", admin.site.urls),
    path("", include("kafkaviz.classroom.urls")),
]
