from django.urls import path

from kafkaviz.lessons import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("lessons/<slug:slug>/", views.lesson, name="lesson"),
    path("sandbox/", views.lesson, {"slug": "sandbox"}, name="sandbox"),
]
