from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "kafkaviz.live"
    label = "live"

    def ready(self) -> None:
        # Each sandbox kind joins kinds.SANDBOX_KINDS when its module is imported.
        from . import (client_session, compaction, guided_cluster, inside_segment, page_cache,  # noqa: F401
                       replication, retention, segments, topic)
