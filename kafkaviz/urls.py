from django.urls import path

from kafkaviz.lessons import views
from kafkaviz.live.views import healthz

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("lessons/<slug:slug>/", views.lesson, name="lesson"),
]
