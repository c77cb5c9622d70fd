"""The replicated cluster: brokers with their own log directories, a controller, a
network with faults, leader/follower replication with HW- or epoch-based truncation."""
from .config import CLIENT, ClusterConfig

__all__ = ["Cluster", "ClusterConfig", "CLIENT"]


def __getattr__(name: str):
    # Lazy so that importing engine.cluster.events/config does not need the storage engine.
    if name == "Cluster":
        from .cluster import Cluster
        return Cluster
    raise AttributeError(name)
