"""The ``guided-cluster`` sandbox kind: a replicated cluster driven by the lesson's own
guided steps (lessons 14 and 15), where ``replication`` plays a named engine scenario.

A lesson's ``[[steps]]`` hold the engine's own commands (``engine/cluster/commands.py``,
the same vocabulary as ``replication``: ``{cmd = "produce", producer = "safe", ...}``);
their fields and bounds are generated from the engine's metadata
(:func:`~kafkaviz.live.kinds.cluster_spec`). The run is an
:class:`engine.cluster.run.Run` with the lesson's seed and config and the setup applied;
rewind restores its checkpoint of the step (the base class's).

The state each frame carries is read from the engine, never kept on the side: every
replica's log of the lesson's topic as batches (producer id, epoch, sequence, the
transactional and control bits; each transactional record marked committed, aborted or
open by the markers that follow it in that log), HW / LSO / LEO, the leader's
partition directory (``.txnindex``, ``.snapshot``), the producers and the
coordinator's transactions, the last read of each isolation level, the timing
wheels of a broker's produce and fetch purgatories (``SystemTimer.state()``), and -- once a
transaction sent offsets (consume-transform-produce) -- the group's
``__consumer_offsets`` partition drawn the same way, with each group's committed and
pending offsets.

Scenario keys (from the lesson file):

* ``cluster`` -- the cluster config by Kafka name (``brokers``, ``request.timeout.ms``,
  ``timer.events``, ...);
* ``seed`` -- the engine's seed (default 0);
* ``setup`` -- engine commands (``{cmd = ...}``) run when the sandbox opens, before step 1;
* ``topic`` -- the topic the diagrams show (all its partitions);
* ``commands`` -- engine commands the learner may send, and that the steps may use;
* ``broker_names`` -- e.g. {0 = "A"}, shown beside broker ids;
* ``timer_partition`` -- show the purgatory wheels (produce and fetch) of this partition's leader.
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine.cluster.run import Run, make_config
from engine.group.offsets import OFFSETS_TOPIC, decode_key, decode_value
from engine.records.batch import read_end_txn_marker

from .kinds import CHECKPOINTS_BY_HAND, MAX_SNAPSHOTS, SandboxKind

__all__ = ["GuidedClusterSandbox", "log_cells"]

MAX_CELLS = 120          # records drawn per replica (the newest); the timeline has the rest
class GuidedClusterSandbox(SandboxKind):
    """A cluster whose guided steps come from the lesson file."""

    name: ClassVar[str] = "guided-cluster"
    events_kept: ClassVar[int] = 1000

    @property
    def topic(self) -> str:
        return self.scenario.get("topic", "t")

    def make_run(self, run_dir: Any) -> Run:
        run = Run(int(self.scenario.get("seed", 0)), make_config(self.scenario.get("cluster") or {}), str(run_dir),
                  snapshot_every=CHECKPOINTS_BY_HAND, max_snapshots=MAX_SNAPSHOTS, keep_events=self.events_kept,
                  os_fsync=False)
        for cmd in self.scenario.get("setup") or ():
            run.apply(dict(cmd))
        return run

    def own(self, cmd: dict[str, Any]) -> str:
        return super().own({k: v for k, v in cmd.items() if v is not None and v != ""})

    def normal(self, cmd: Any) -> dict[str, Any]:
        return {k: v for k, v in super().normal(cmd).items() if v is not None and v != ""}

    def _retry_writes(self) -> dict[tuple, dict[int, int]]:
        """Offsets a retried request appended (the engine's produce_retried and
        produce_appended events in the run's ring): such a cell is marked on the lanes."""
        retries: dict[int, int] = {}
        out: dict[tuple, dict[int, int]] = {}
        for env in self.run.events.envelopes:
            ev = env.event
            if ev.kind == "produce_retried":
                retries[ev.request_id] = ev.send_id
            elif ev.kind == "produce_appended" and ev.request_id in retries:
                where = out.setdefault((ev.topic, ev.partition), {})
                for off in range(ev.base_offset, ev.last_offset + 1):
                    where[off] = retries[ev.request_id]
        return out

    def _reads(self) -> dict[str, dict[str, Any]]:
        """The last read of each isolation level in the run so far, and the aborted
        records a read_committed one skipped."""
        run, reads = self.run, {}
        for i in range(self.origin, run.position):
            cmd = run.log[i]
            if cmd.get("cmd") != "consume":
                continue
            result, iso = run.results[i], cmd["isolation"]
            got = {r["offset"] for r in result.get("records", [])}
            part = self._leader_partition(cmd["topic"], cmd["partition"])
            skipped: list[int] = []
            if part is not None and iso == "read_committed":
                bound = part.log.last_stable_offset
                skipped = [c["offset"] for c in log_cells(part.log) if c["status"] == "aborted"
                           and cmd["offset"] <= c["offset"] < bound and c["offset"] not in got]
            reads[iso] = {"isolation": iso, "topic": cmd["topic"], "partition": cmd["partition"],
                          "offset": cmd["offset"], "skipped_aborted": skipped,
                          "records": [{"offset": r["offset"], "value": r["value"]} for r in result.get("records", [])],
                          "own": self.own_at is not None and i >= self.own_at}
        return reads

    def _leader_partition(self, topic: str, pnum: int) -> Any:
        cluster = self.run.cluster
        leader = cluster.controller.partition(topic, pnum).leader
        if leader < 0 or not cluster.brokers[leader].alive:
            return None
        return cluster.brokers[leader].partitions.get((topic, pnum))

    # ---- state ---------------------------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        self._retried = self._retry_writes()
        cluster = self.run.cluster
        cstate = cluster.state()
        topic = self.topic
        meta = cstate["topics"].get(topic)
        partitions = []
        for pnum, pm in enumerate(meta["partitions"] if meta else []):
            partitions.append(self._partition_view(topic, pnum, pm))
        txns = cluster.transactions.state() if getattr(cluster, "transactions", None) is not None else {}
        out: dict[str, Any] = {
            "clock_ms": cluster.now_ms(),
            "topic": topic,
            "brokers": [{"id": i, "alive": cstate["brokers"][str(i)]["alive"]} for i in range(len(cluster.brokers))],
            "client_links": [f for f in cstate["network"]["faults"] if -1 in (f["src"], f["dst"]) and f["cut"]],
            "partitions": partitions,
            "producers": [p.to_dict() for p in cluster.producers.values()],
            "transactions": [{"transactional_id": tid, **md} for tid, md in txns.items()],
            "reads": self._reads(),
        }
        offsets = self._offsets_view()
        if offsets is not None:
            out.update(offsets)
        tp = self.scenario.get("timer_partition")
        if tp is not None and meta is not None:
            out["timers"] = self._timer_views(topic, int(tp))
        return out

    def _partition_view(self, topic: str, pnum: int, pm: dict[str, Any]) -> dict[str, Any]:
        cluster = self.run.cluster
        view: dict[str, Any] = {"partition": pnum, "leader": pm["leader"], "leader_epoch": pm.get("leader_epoch"),
                                "isr": list(pm["isr"]), "replicas": [], "files": [], "aborted": []}
        for b in pm["replicas"]:
            broker = cluster.brokers[b]
            part = broker.partitions.get((topic, pnum)) if broker.alive else None
            lane: dict[str, Any] = {"broker": b, "alive": broker.alive, "leader": b == pm["leader"]}
            if part is not None:
                log = part.log
                cells = log_cells(log, offset_commit_text if topic == OFFSETS_TOPIC else None)[-MAX_CELLS:]
                retried = self._retried.get((topic, pnum), {})
                for c in cells:
                    if c["offset"] in retried:
                        c["retry_of"] = retried[c["offset"]]
                lane.update({"leo": log.log_end_offset, "high_watermark": part.hw,
                             "log_start_offset": log.log_start_offset, "cells": cells})
                if b == pm["leader"]:
                    view.update({"high_watermark": part.hw, "last_stable_offset": log.last_stable_offset,
                                 "leo": log.log_end_offset,
                                 "files": [{"name": n, "size": s} for n, s in cluster.disk.list_files(log.dir)],
                                 "aborted": [{"producer_id": t.producer_id, "first_offset": t.first_offset,
                                              "last_offset": t.last_offset}
                                             for t in log.aborted_transactions(log.log_start_offset,
                                                                               log.log_end_offset)]})
            view["replicas"].append(lane)
        return view

    def _offsets_view(self) -> dict[str, Any] | None:
        """The ``__consumer_offsets`` partitions that hold transactional offsets, and each
        group's committed / pending offsets, read from the engine."""
        cluster = self.run.cluster
        svc = getattr(cluster, "txn_offsets", None)
        if svc is None or OFFSETS_TOPIC not in cluster.controller.topics:
            return None
        from engine.cluster.txn_offsets import offset_fetch
        meta = cluster.state()["topics"][OFFSETS_TOPIC]
        groups = sorted(svc.groups_seen)
        parts, rows = [], []
        for pnum in sorted({cluster.groups.partition_for(g) for g in groups}):
            parts.append(self._partition_view(OFFSETS_TOPIC, pnum, meta["partitions"][pnum]))
        pending = svc.state()
        for g in groups:
            got = offset_fetch(cluster, g)
            rows.append({"group": g, "offsets_partition": cluster.groups.partition_for(g), "error": got["error"],
                         "committed": [[t, p, o] for (t, p), o in sorted(got["offsets"].items())],
                         "pending": pending.get(g, [])})
        return {"offsets_partitions": parts, "group_offsets": rows}

    def _timer_views(self, topic: str, pnum: int) -> list[dict[str, Any]]:
        """The wheels of both purgatories of the partition's leader (produce, then fetch);
        empty while it has no live leader."""
        cluster = self.run.cluster
        leader = cluster.controller.partition(topic, pnum).leader
        if leader < 0 or not cluster.brokers[leader].alive:
            return []
        broker = cluster.brokers[leader]
        return [{"broker": leader, "purgatory": p.name, **p.timer.state()}
                for p in (broker.produce_purgatory, broker.fetch_purgatory)]


def offset_commit_text(rec: Any) -> str:
    """An OffsetCommit record of ``__consumer_offsets`` as a cell's text: "t-0→2"."""
    key = decode_key(rec.key) if rec.key is not None else None
    if key is None:
        return "?"
    value = decode_value(rec.value)
    return f"{key.topic}-{key.partition}→{'∅' if value is None else value.offset}"


def log_cells(log: Any, text: Any = None) -> list[dict[str, Any]]:
    """Every record of ``log`` as a cell: offset, value (``text(record)`` when given), the
    batch's producer id / epoch / sequence, ``control`` ("COMMIT"/"ABORT") for markers, and
    ``status``: "plain" (not transactional), "committed" / "aborted" (a marker of its
    producer follows in this log), "open" (none yet) or "marker"."""
    cells: list[dict[str, Any]] = []
    pending: dict[int, list[dict[str, Any]]] = {}
    for batch in log.batches(log.log_start_offset, log.log_end_offset):
        for i, rec in enumerate(batch.records):
            cell = {"offset": rec.offset, "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                    "sequence": batch.base_sequence + i if batch.base_sequence >= 0 else -1,
                    "transactional": batch.is_transactional}
            if batch.is_control:
                marker = read_end_txn_marker(rec)
                kind = "COMMIT" if marker is not None and marker.type.name == "COMMIT" else "ABORT"
                cell.update(value=kind, control=kind, status="marker")
                for c in pending.pop(batch.producer_id, []):
                    c["status"] = "committed" if kind == "COMMIT" else "aborted"
            else:
                value = text(rec) if text is not None else (
                    rec.value.decode("utf-8", "replace") if rec.value is not None else None)
                cell.update(value=value,
                            control=None, status="open" if batch.is_transactional else "plain")
                if batch.is_transactional:
                    pending.setdefault(batch.producer_id, []).append(cell)
            cells.append(cell)
    return cells
