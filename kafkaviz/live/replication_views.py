"""Extra views of a replicated partition for the replication lessons (8, 9, 11), read from
the engine: the leader's remote LEOs and how its HW follows from them, LEO/HW per replica
over virtual time (from the engine's ``leo_changed`` / ``high_watermark_changed`` events),
and every produce request with its acks and what became of it. Plain JSON for frames;
the replication kind adds them to its state when the lesson's diagrams ask for them.
"""
from __future__ import annotations

from typing import Any

from engine.cluster.commands import ACKS

ACKS_NAMES = {value: name for name, value in ACKS.items()}    # -1 → "all": how the page shows acks

__all__ = ["hw_view", "offset_series", "produce_table", "consumer_view", "MAX_POINTS"]

MAX_POINTS = 400     # per line of the chart; older points are dropped


def hw_view(cluster: Any, topic: str, partition: int) -> dict[str, Any] | None:
    """The leader's own LEO, its remote LEO per follower, the ISR, and the HW they give."""
    meta = cluster.controller.topics.get(topic)
    if meta is None or partition >= len(meta.partitions):
        return None
    leader = meta.partitions[partition].leader
    if leader is None or leader < 0:
        return None
    broker = cluster.brokers[leader]
    part = broker.partitions.get((topic, partition)) if broker.alive else None
    if part is None or part.role != "leader":
        return None
    isr = list(part.isr)
    remotes = {str(b): r.leo for b, r in sorted(part.remotes.items())}
    in_isr = [part.leo] + [r.leo for b, r in part.remotes.items() if b in isr and r.leo >= 0]
    return {"leader": leader, "leo": part.leo, "remote_leos": remotes, "isr": isr, "high_watermark": part.hw,
            "min_isr_leo": min(in_isr) if in_isr else part.leo}


def offset_series(events: Any, topic: str, partition: int) -> list[dict[str, Any]]:
    """``[{"broker", "what": "leo"|"hw", "points": [[time_ms, value], ...]}]`` from the events
    the cluster still keeps (its event log is bounded), one line per replica and number."""
    lines: dict[tuple[int, str], list[list[int]]] = {}
    for env in events.envelopes:
        ev = env.event
        if ev.kind not in ("leo_changed", "high_watermark_changed"):
            continue
        if ev.topic != topic or ev.partition != partition:
            continue
        key = (ev.broker, "leo" if ev.kind == "leo_changed" else "hw")
        pts = lines.setdefault(key, [[env.time_ms, ev.old]])
        pts.append([env.time_ms, ev.new])
    now = events.clock.now_ms()
    out = []
    for (broker, what), pts in sorted(lines.items()):
        pts = pts[-MAX_POINTS:]
        if pts[-1][0] < now:
            pts.append([now, pts[-1][1]])
        out.append({"broker": broker, "what": what, "points": pts})
    return out


def produce_table(cluster: Any, acknowledged: list[dict[str, Any]], topic: str, partition: int) -> list[dict[str, Any]]:
    """Every produce request to the partition, oldest first: values, acks, what the client was
    told (acked / error / waiting / no answer for acks=0), and whether an acknowledged record
    is lost now (the checker's judgement in ``acknowledged``)."""
    lost = {a["digest"] for a in acknowledged if a.get("lost")}
    rows = []
    for rid, res in sorted(cluster.produce_results.items()):
        if res.topic != topic or res.partition != partition:
            continue
        d = res.to_dict()
        status = "sent" if res.acks == 0 else ("acked" if res.status == "ok" else "error")
        rows.append({"request_id": rid, "values": [_text(v) for v in res.values], "acks": ACKS_NAMES[res.acks], "status": status,
                     "error": res.error, "base_offset": res.base_offset,
                     "lost": status == "acked" and any(dg in lost for dg in d["digests"])})
    for rid, (t, p, acks, _sent, values, _dest) in sorted(cluster._pending_produces.items()):
        if t == topic and p == partition and rid not in cluster.produce_results:
            rows.append({"request_id": rid, "values": [_text(v) for v in values], "acks": ACKS_NAMES[acks], "status": "waiting",
                         "error": None, "base_offset": None, "lost": False})
    rows.sort(key=lambda r: r["request_id"])
    return rows[-50:]


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", "replace")[:40]


def consumer_view(events: Any, topic: str, partition: int) -> dict[str, Any] | None:
    """The latest read of the partition by a consumer (the engine's ``consumer_read``): the
    broker it read from, where it started, how many records, the next offset to read and
    the high watermark that bounded it -- a consumer never reads at or past the HW."""
    for env in reversed(events.envelopes):
        ev = env.event
        if ev.kind == "consumer_read" and ev.topic == topic and ev.partition == partition:
            return {"seq": env.seq, "broker": ev.broker, "offset": ev.offset, "records": ev.records,
                    "next_offset": ev.next_offset, "high_watermark": ev.high_watermark}
    return None
