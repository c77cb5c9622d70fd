from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "kafkaviz.lab"
    label = "lab"
