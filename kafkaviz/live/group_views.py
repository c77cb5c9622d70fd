"""Views of a consumer group for lessons 12 and 13, read from the engine: who owns each
partition of the lesson's topic, the committed offset, high watermark and lag per
partition, the members and generation (``group_view``); the group protocol's recent steps
(``protocol_steps``); committed offset and lag over virtual time (``lag_series``); and how
many times each offset was handed to the group (``deliveries``: duplicates and gaps after a
crash). Plain JSON for frames; the replication kind adds them when a lesson's diagrams ask.
"""
from __future__ import annotations

from typing import Any

from engine import narration

__all__ = ["group_view", "protocol_steps", "lag_series", "deliveries", "PROTOCOL_KINDS"]

PROTOCOL_KINDS = ("coordinator_found", "join_group_sent", "rebalance_started", "join_group_completed",
                  "sync_group_sent", "sync_group_completed", "heartbeat_answered", "member_removed",
                  "consumer_stopped", "partitions_revoked", "partitions_assigned", "group_request_failed")
MAX_STEPS_SHOWN = 14
MAX_POINTS = 400


def _group_name(svc: Any, preferred: str | None) -> str | None:
    names = sorted({c.group for c in svc.consumers.values()})
    if preferred in names:
        return preferred
    return names[0] if names else None


def group_view(cluster: Any, topic: str, group: str | None = None) -> dict[str, Any] | None:
    """The group on ``topic``: state, generation, protocol, leader, coordinator; each
    consumer (alive or not, its member id, owned partitions); each partition of the topic
    with its owner (a client name), committed offset, high watermark and lag."""
    svc = getattr(cluster, "groups", None)
    if svc is None:
        return None
    state = svc.state()
    name = _group_name(svc, group)
    if name is None:
        return None
    g = state["groups"][name]
    members = g.get("members") or {}
    owner: dict[int, str] = {}
    for mid, m in members.items():
        for t, p in m.get("assignment") or []:
            if t == topic:
                owner[p] = m.get("client") or mid
    lag = g.get("lag") or {}
    count = svc.partition_counts([topic]).get(topic, 0)
    partitions = []
    for p in range(count):
        row = lag.get(f"{topic}-{p}") or {}
        hw = svc.high_watermark(topic, p)
        committed = row.get("committed")
        partitions.append({"partition": p, "owner": owner.get(p), "committed": committed, "high_watermark": hw,
                           "lag": None if hw is None else hw - (committed or 0) if committed is not None else None})
    consumers = []
    for cname, c in state["consumers"].items():
        if c["group"] != name:
            continue
        alive = c["alive"] and c["status"] != "closed"
        # Not alive: an engine consumer closed (LeaveGroup sent) or crashed (the lessons'
        # consumer_crash); a real client's connection (status "wire") just closed: the
        # listener cannot tell a killed process from a clean close, so it says only that.
        gone = "closed" if c["alive"] else "disconnected" if c["status"] == "wire" else "dead"
        consumers.append({"name": cname, "alive": alive,
                          "status": c["status"] if alive else gone,
                          "member_id": c["member_id"] if alive else None, "generation": c["generation"],
                          "owned": [p for t, p in (c["owned"] if alive else []) if t == topic],
                          "positions": c["positions"] if alive else {},
                          "in_group": any(m.get("client") == cname for m in members.values())})
    return {"group": name, "state": g.get("state"), "generation": g.get("generation"), "protocol": g.get("protocol"),
            "leader": g.get("leader"), "coordinator": g.get("coordinator"),
            "offsets_partition": g.get("offsets_partition"), "topic": topic,
            "members": [{"member": mid, "client": m.get("client"),
                         "partitions": [p for t, p in m.get("assignment") or [] if t == topic]}
                        for mid, m in sorted(members.items())],
            "consumers": consumers, "partitions": partitions}


def protocol_steps(events: Any, lang: str, since_seq: int = 0) -> list[dict[str, Any]]:
    """The group protocol's most recent steps (JoinGroup, SyncGroup, heartbeats answered with
    an error, removals, assignments), oldest first, each as the narration's sentence.
    Plain heartbeats (``NONE``) are left out: they are the steady state, not a step."""
    out = []
    for env in events.envelopes:
        ev = env.event
        if env.seq <= since_seq or ev.kind not in PROTOCOL_KINDS:
            continue
        d = env.to_dict()
        if ev.kind == "heartbeat_answered" and d.get("error") == "NONE":
            continue
        out.append({"seq": env.seq, "time_ms": env.time_ms, "kind": ev.kind, "text": narration.describe(d, lang)})
    return out[-MAX_STEPS_SHOWN:]


def lag_series(events: Any, topic: str) -> list[dict[str, Any]]:
    """Per partition of ``topic``: ``[[time_ms, high watermark, committed, lag], ...]`` at each
    change of the leader's HW (the largest any replica reports) or of a committed offset."""
    hw: dict[int, int] = {}
    committed: dict[int, int] = {}
    points: dict[int, list[list[Any]]] = {}
    for env in events.envelopes:
        ev = env.event
        if getattr(ev, "topic", None) != topic:
            continue
        if ev.kind == "high_watermark_changed":
            if ev.new <= hw.get(ev.partition, -1):
                continue
            hw[ev.partition] = ev.new
        elif ev.kind == "offset_committed":
            committed[ev.partition] = ev.offset
        else:
            continue
        p = ev.partition
        h, c = hw.get(p, 0), committed.get(p)
        pts = points.setdefault(p, [])
        row = [env.time_ms, h, c, None if c is None else h - c]      # no lag before the group's first commit
        if pts and pts[-1][0] == env.time_ms:
            pts[-1] = row
        else:
            pts.append(row)
    now = events.clock.now_ms()
    out = []
    for p, pts in sorted(points.items()):
        pts = pts[-MAX_POINTS:]
        if pts[-1][0] < now:
            pts.append([now, *pts[-1][1:]])
        out.append({"partition": p, "points": pts})
    return out


def deliveries(events: Any, topic: str, group: str | None) -> list[dict[str, Any]]:
    """Per partition of ``topic``: how many times the group was handed each offset
    (``counts[offset]``), from the consumers' fetches. 2 means a duplicate; an offset
    handed once and then skipped by a restart shows in ``skipped`` as never re-read."""
    counts: dict[int, dict[int, int]] = {}
    for env in events.envelopes:
        ev = env.event
        if ev.kind != "consumer_fetched" or ev.topic != topic or (group is not None and ev.group != group):
            continue
        per = counts.setdefault(ev.partition, {})
        for off in range(ev.offset, ev.next_offset):
            per[off] = per.get(off, 0) + 1
    return [{"partition": p, "counts": [[o, n] for o, n in sorted(per.items())][-200:]}
            for p, per in sorted(counts.items())]
