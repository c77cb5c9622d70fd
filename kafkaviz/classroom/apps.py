from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "kafkaviz.classroom"
    label = "classroom"
    verbose_name = "Classroom rooms"
