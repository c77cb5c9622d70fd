from django.apps import AppConfig


class LessonsConfig(AppConfig):
    name = "kafkaviz.lessons"
    label = "lessons"
