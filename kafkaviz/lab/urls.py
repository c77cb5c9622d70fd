from django.urls import path

from . import views

app_name = "lab"

urlpatterns = [
    path("", views.home, name="home"),
    path("latest/<str:preset>/", views.latest, name="latest"),
    path("sweeps/", views.launch_sweep, name="launch_sweep"),
    path("sweeps/<str:name>/", views.sweep, name="sweep"),
    path("sweeps/<str:name>/cells/<str:cell>/worst/", views.worst, name="worst"),
    path("analytics/", views.launch_analytics, name="launch_analytics"),
    path("analytics/<str:name>/", views.analytics, name="analytics"),
    path("jobs/<str:name>/progress/", views.progress, name="progress"),
]
