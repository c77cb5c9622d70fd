from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "kafkaviz.live"
    label = "live"
