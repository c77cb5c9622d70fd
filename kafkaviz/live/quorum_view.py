"""The KRaft picture's facts (lesson 17): the controller quorum's nodes and the metadata log.

Read from the engine's state, never computed a second time: each Raft node's own ``describe()``
(state, epoch, log end, HW), the controller's applied offsets, and the records of the most
advanced running voter's ``__cluster_metadata`` log (data records by their Kafka type name,
LeaderChangeMessage control batches as such), each marked committed or not by the quorum's HW.
"""
from __future__ import annotations

from typing import Any

from engine.cluster import kraft_controller
from engine.kraft.records import control_type
from engine.records import ControlRecordType, iter_batches

__all__ = ["quorum_view", "MAX_LOG_RECORDS"]

MAX_LOG_RECORDS = 24     # the newest records the strip shows (older ones are counted)


def _log_records(node: Any) -> list[dict[str, Any]]:
    """(offset, epoch, type) of every record in ``node``'s metadata log, oldest first."""
    log = node.log
    if log is None or node.log_end_offset <= 0:
        return []
    info = log.read(node.log_start_offset, 1 << 31, max_offset=node.log_end_offset, trace=False)
    out = []
    for _, batch in iter_batches(info.records, verify_crc=False):
        epoch = batch.partition_leader_epoch
        for r in batch.records:
            if batch.is_control:
                kind = _CONTROL_NAMES.get(control_type(r.key), "control")
            else:
                kind = _type_name(kraft_controller.decode_record(r.value))   # the controller's own reader
            out.append({"offset": r.offset, "epoch": epoch, "type": kind})
    return out


_CONTROL_NAMES = {ControlRecordType.LEADER_CHANGE: "LeaderChangeMessage", ControlRecordType.KRAFT_VERSION: "KRaftVersionRecord",
                  ControlRecordType.KRAFT_VOTERS: "VotersRecord"}


def _type_name(record: Any) -> str:
    # The class name (TopicRecord), as Kafka's sources and the metadata_applied events name it.
    return type(record).__name__


def quorum_view(cluster: Any) -> dict[str, Any] | None:
    """None for a cluster without a Raft quorum (the hybrid controller)."""
    if not getattr(cluster.config, "kraft", False):
        return None
    ctl = cluster.controller
    desc = ctl.describe()
    voters = set(desc["voters"])
    nodes = {n["node"]: n for n in desc["nodes"]}
    applied = desc["applied_offsets"]
    running = [ctl.quorum.nodes[v] for v in sorted(voters) if ctl.quorum.nodes[v].alive]
    source = max(running, key=lambda n: (n.state == "leader", n.log_end_offset), default=None)
    records = _log_records(source) if source is not None else []
    hw = desc["metadata_high_watermark"]
    for r in records:
        r["committed"] = r["offset"] < hw
    return {
        "mode": desc["mode"], "active": desc["active"], "epoch": desc["epoch"], "voters": sorted(voters),
        "high_watermark": hw,
        "controllers": [dict(nodes[v], applied=applied.get(str(v))) for v in sorted(voters)],
        "applied": applied,
        "log": {"node": source.id if source is not None else None, "records": records[-MAX_LOG_RECORDS:],
                "older": max(0, len(records) - MAX_LOG_RECORDS),
                "end": source.log_end_offset if source is not None else 0,
                # The log start (it moves to a snapshot) and the snapshots <offset>-<epoch>.checkpoint.
                "start": source.log_start_offset if source is not None else 0,
                "snapshots": [s.name for s in source.snapshots] if source is not None else []},
    }
