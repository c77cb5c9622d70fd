from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "kafkaviz.live"
    label = "live"

    def ready(self) -> None:
        # Each sandbox kind joins kinds.SANDBOX_KINDS when its module is imported.
        from . import client_session, guided_cluster, replication, storage_kinds  # noqa: F401
