"""A run: one seed, one initial cluster config and the log of commands applied to it.

Because the engine is deterministic, the triple is the whole truth: replaying the
commands on a fresh cluster with the same seed and config gives the same event stream,
byte for byte. A :class:`Run` keeps that log and, for cheap time travel, **checkpoints**:

* every ``snapshot_every`` steps a checkpoint of the whole cluster — its engine state
  (pickled without the event history, zlib-compressed) and its files. File contents go
  into a content-addressed, reference-counted block store shared by all checkpoints
  (copy-on-write: a block that did not change since an earlier checkpoint is stored
  once; segments only grow at the end, so a new checkpoint adds little more than the
  last block of each file that grew). The steps between two checkpoints are their
  commands — the run's own redo log — replayed on demand;
* at most ``max_snapshots`` checkpoints are kept: step 0 and the newest always, the
  others thinned so they stay dense near the current step and sparse far from it;
* the event stream is kept in a bounded ring (``keep_events`` envelopes; the running
  digest still covers the whole stream); :attr:`Run.events_dropped` counts what fell
  out, and ``checker.event_counts`` counts every kind over the whole stream.

Memory per run is therefore bounded by the number of checkpoints, not by its length
(the command log itself, a few hundred bytes a step, is what the run *is*).

* :meth:`Run.seek` (alias :meth:`Run.rewind`) to step *k*: restore the nearest checkpoint
  at or before *k* and replay the commands after it — the event stream after a seek is
  the one the run had at *k*; the commands after *k* stay in the log, so :meth:`Run.redo`
  steps forward through them again, and :meth:`Run.apply` of a new command forgets them;
* :meth:`Run.fork` to start a new run (in a new data directory) from step *k*: same
  history up to *k*, its own future.

Every command is watched by the :class:`~engine.cluster.checker.Checker`;
:meth:`Run.summary` reports the final logs of every replica, what the clients were told
and the checker's findings.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..clock import VirtualClock
from ..disk import Disk, FileImage
from .. import json_input
from ..events import Event, EventLog, canonical_json, event
from ..errors import InvalidRequestError, KafkaError
from .checker import AckedRecord, Checker, ConsumedRecord, PartitionView, ReplicaView
from ..records import iter_batches
from .commands import (Command, Consume, Produce, _text, _topics, apply_command, command_to_dict, parse_command,
                       record_digest, validate_command)
from .config import ClusterConfig

__all__ = ["Run", "RunMoved", "run_commands", "load_command_log", "dump_command_log", "cluster_views", "format_summary",
           "make_config", "CommandLog", "Checkpoint", "BlockStore"]


@event("run_moved")
class RunMoved(Event):
    """The run's user moved it: it is now at ``step`` (it was at ``from_step``); ``how`` is
    "step", "back" (a checkpoint restored), "load" or "command" (a new command applied).
    Steps are the user's (a lesson's step groups a few commands). An event of the run, not
    of its world: sent to whoever watches the run, never into the world's event stream
    (so never in its digest). A page drops timeline events after ``last_seq``."""
    step: int
    from_step: int
    last_seq: int
    how: str


@dataclass(frozen=True)
class CommandLog:
    """A parsed JSONL command log: optional header (seed, config) and the commands."""

    seed: int | None
    config: dict
    commands: tuple


def make_config(config: ClusterConfig | Mapping[str, Any] | None = None, **overrides: Any) -> ClusterConfig:
    """A :class:`ClusterConfig` from a config, a mapping of Kafka/field names, or None,
    with ``overrides`` (None values ignored) applied on top."""
    if config is None:
        base = ClusterConfig()
    elif isinstance(config, ClusterConfig):
        base = config
    else:
        base = ClusterConfig.from_mapping(dict(config))
    changes = {k: v for k, v in overrides.items() if v is not None}
    return base.replace(**changes) if changes else base


class ClusterRules:
    """How a run parses, checks and applies commands on a :class:`Cluster` (the default
    world); a storage world (``engine/storage_world.py``) carries the same three as its
    own ``parse``/``check``/``apply``."""

    parse = staticmethod(parse_command)
    check = staticmethod(validate_command)
    apply = staticmethod(apply_command)


class _WorldRules:
    def __init__(self, world_cls: Any) -> None:
        self.parse = world_cls.parse
        self.check = lambda world, cmd: world.check(cmd)
        self.apply = lambda world, cmd: world.apply(cmd)


class Run:
    """A world (a replicated :class:`Cluster`, or a one-broker storage world) plus its
    command log, periodic snapshots and, for a cluster, its checker.

    ``world`` is None (a cluster of ``config``) or a storage world class
    (``engine/storage_world.py``), built as ``world(disk_root, seed, events, scenario)``
    where ``scenario`` is the lesson's plain data (``config`` then stays the default)."""

    def __init__(self, seed: int = 0, config: ClusterConfig | Mapping[str, Any] | None = None,
                 disk_root: str | None = None, *, snapshot_every: int = 10, max_snapshots: int = 16,
                 keep_events: int | None = 1000, os_fsync: bool = True, world: Any = None,
                 scenario: Mapping[str, Any] | None = None) -> None:
        from .cluster import Cluster

        if disk_root is None:
            raise InvalidRequestError("a run needs a data directory (disk_root)")
        if snapshot_every < 1:
            raise InvalidRequestError(f"snapshot_every must be >= 1, got {snapshot_every}")
        if keep_events is not None and keep_events < 1:
            raise InvalidRequestError(f"keep_events must be >= 1 or None, got {keep_events}")
        if os.path.isdir(disk_root) and os.listdir(disk_root):
            raise InvalidRequestError(f"the data directory {disk_root} is not empty; a run starts from nothing")
        self.seed = int(seed)
        self.config = make_config(config)
        self.disk_root = str(disk_root)
        self.snapshot_every = snapshot_every
        self.max_snapshots = max(3, max_snapshots)
        self.world_cls = world
        self.scenario = dict(scenario or {})
        events = EventLog(VirtualClock(), keep=keep_events)
        if world is None:
            self.rules: Any = ClusterRules
            self.world = Cluster(Disk(self.disk_root, os_fsync=os_fsync), self.config, self.seed, events=events)
            self.checker: Checker | None = Checker()
            for env in self.world.events.envelopes:     # the cluster's start-up, before the checker
                self.checker.event_counts[env.event.kind] = self.checker.event_counts.get(env.event.kind, 0) + 1
            self.checker.attach(self.world.events)
            self._reader: ReplicaReader | None = ReplicaReader(self.world.events)
        else:
            self.rules = _WorldRules(world)
            self.world = world(self.disk_root, self.seed, events, self.scenario, os_fsync=os_fsync)
            self.checker = None
            self._reader = None
        self.log: list[dict] = []       # normalised command dicts, including the "future" after a seek
        self.results: list[dict] = []   # result of log[i], for every step applied at least once
        self.position = 0
        self._store = BlockStore()
        self._snapshots: dict[int, Checkpoint] = {}
        self._on_disk: int | None = None   # a checkpoint whose files are what the data directory holds
        # What changes the world between commands, kept with the run (a wire listener's client
        # traffic, ``wire/traffic.py``): ``before(run)`` as a command starts, ``after(run)`` as
        # the run reaches a position (a command done, a checkpoint restored), ``forget(run)``
        # when a new command replaces the run's future. None: nothing does.
        self.outside: Any = None
        self._take_snapshot()

    @property
    def cluster(self) -> Any:
        """The world (for a cluster run, its :class:`Cluster`)."""
        return self.world

    @cluster.setter
    def cluster(self, world: Any) -> None:
        self.world = world

    @property
    def events(self) -> EventLog:
        return self.world.events

    def _parse(self, cmd: Mapping[str, Any] | Command) -> Command:
        return cmd if isinstance(cmd, Command) else self.rules.parse(dict(cmd))

    # ---- commands ----------------------------------------------------------------------
    @property
    def cluster_time_ms(self) -> int:
        return self.world.scheduler.now_ms()

    def apply(self, cmd: Mapping[str, Any] | Command) -> dict[str, Any]:
        """Apply one command (dict or Command) at the current position and append it to the
        log. Commands after the current position (left by a seek) are forgotten first.

        Atomic with respect to the run's record: either the command is applied and
        recorded, or it raises and nothing happened — clock, events, files, checker and
        :meth:`state_digest` are as before. A refusal (a Kafka-named error) comes from
        validation, before anything is touched; should applying a validated command fail
        anyway, the run is put back to the state before it (the nearest snapshot, then
        the commands since, replayed) and the error is raised."""
        parsed = self._parse(cmd)
        self.rules.check(self.world, parsed)
        # Apply first: a refused command raises here and must not cost the redo list.
        if self.outside is not None:
            self.outside.forget(self)
        result = self._apply_atomic(parsed)
        del self.log[self.position - 1:]
        del self.results[self.position:]
        for k in [k for k in self._snapshots if k > self.position]:
            self._drop_snapshot(k)
        self.log.append(command_to_dict(parsed))
        return result

    def _apply(self, cmd: Command) -> dict[str, Any]:
        self._on_disk = None               # the files are about to change
        if self.outside is not None:
            self.outside.before(self)
        result = self.rules.apply(self.world, cmd)
        if self.checker is not None:
            self._watch(cmd, result)
        if self.position < len(self.results):
            self.results[self.position] = result     # replaying a step: the same result
        else:
            self.results.append(result)
        self.position += 1
        if self.outside is not None:
            self.outside.after(self)
        if self.position % self.snapshot_every == 0 and not self._outside_taken():
            self._take_snapshot()
        disk = getattr(self.world, "disk", None)
        if disk is not None:
            disk.flush()        # a command's gathered writes reach the OS when it ends (write-behind)
        return result

    def _watch(self, cmd: Command, result: dict[str, Any]) -> None:
        """The checker's look at a cluster after a command."""
        if isinstance(cmd, Produce):
            self.checker.expect_produce(result["request_id"], cmd.topic, cmd.partition, cmd.acks,
                                        [r["digest"] for r in result["records"]],
                                        [r["value"] for r in result["records"]])
        views = cluster_views(self.cluster, reader=self._reader)
        if isinstance(cmd, Consume):
            self.checker.note_consumed(
                [ConsumedRecord(cmd.topic, cmd.partition, r["offset"], r["digest"]) for r in result["records"]],
                views)
        self.checker.check(views)

    def apply_all(self, cmds: Iterable[Mapping[str, Any] | Command]) -> list[dict]:
        return [self.apply(c) for c in cmds]

    def queue(self, cmds: Iterable[Mapping[str, Any] | Command]) -> None:
        """Put commands after the current position without applying them (a lesson's
        scenario): :meth:`redo` and :meth:`seek` then step through them. Each is parsed now
        and checked against the cluster when it is applied."""
        parsed = [self._parse(c) for c in cmds]
        del self.log[self.position:]
        self.log.extend(command_to_dict(c) for c in parsed)

    def redo(self) -> dict[str, Any]:
        """Step forward through the commands left after a seek (replaying the next one);
        atomic like :meth:`apply`."""
        if self.position >= len(self.log):
            raise InvalidRequestError(f"nothing to redo: at step {self.position} of {len(self.log)}")
        parsed = self.rules.parse(self.log[self.position])
        self.rules.check(self.world, parsed)
        return self._apply_atomic(parsed)

    def _apply_atomic(self, cmd: Command) -> dict[str, Any]:
        step = self.position
        results = len(self.results)
        try:
            return self._apply(cmd)
        except BaseException as exc:
            del self.results[max(results, step):]
            self._roll_back(step)
            try:
                exc.rolled_back = True    # a failure while applying, not a refusal
            except AttributeError:  # pragma: no cover - exceptions without a __dict__
                pass
            raise

    def _roll_back(self, step: int) -> None:
        """Put the run back to ``step`` after a command failed half-way: restore the nearest
        snapshot at or before it and replay the recorded commands up to it. The engine is
        deterministic, so this is exactly the state before the failed command."""
        for k in [k for k in self._snapshots if k > step]:
            self._drop_snapshot(k)
        self._restore(max(k for k in self._snapshots if k <= step), self.disk_root)
        while self.position < step:
            self._apply(self.rules.parse(self.log[self.position]))

    def state_digest(self) -> str:
        """SHA-256 over everything a run is: position, clock, the event stream's digest and
        length, the cluster's whole state (every replica's records included), every file
        of the data directory, the checker's findings and acknowledged records, and the
        results so far. Equal digests = the same run state."""
        h = hashlib.sha256()
        events = self.cluster.events
        h.update(canonical_json({"position": self.position, "time_ms": self.cluster_time_ms, "seq": events.seq,
                                 "events": events.digest(), "state": self.cluster.state(),
                                 "checker": self.checker.summary() if self.checker else {},
                                 "acked": [list(_plain(a)) for a in self.checker.acked] if self.checker else [],
                                 "results": self.results[:self.position]}).encode())
        for rel, image in sorted(self.cluster.disk.capture().items()):
            h.update(f"{rel}|{image.size}|{image.is_dir}|".encode())
            h.update(hashlib.sha256(image.data).digest())
        return h.hexdigest()

    # ---- time travel ---------------------------------------------------------------------
    @property
    def events_dropped(self) -> int:
        """Events emitted by this run that the bounded ring no longer holds."""
        events = self.cluster.events
        return events.seq - events.retained_count()

    def _take_snapshot(self) -> None:
        if self.position in self._snapshots:
            self._drop_snapshot(self.position)
        newest = self._snapshots[max(self._snapshots)] if self._snapshots else None
        self._snapshots[self.position] = Checkpoint.take(self.position, self.cluster, self.checker, self._store,
                                                         newest.files if newest is not None else None)
        self._on_disk = self.position      # the data directory holds this checkpoint's files
        self._thin()

    def _drop_snapshot(self, step: int) -> None:
        self._snapshots.pop(step).release(self._store)

    def _thin(self) -> None:
        """Keep at most ``max_snapshots``: step 0 and the newest stay; otherwise drop the
        checkpoint whose removal leaves the smallest gap for its distance from the current
        step, so they stay dense near it and grow sparse (geometrically) far from it."""
        while len(self._snapshots) > self.max_snapshots:
            steps = sorted(self._snapshots)
            here = self.position
            victim = min(range(1, len(steps) - 1),
                         key=lambda i: ((steps[i + 1] - steps[i - 1]) / (abs(here - steps[i]) + 1), steps[i]))
            self._drop_snapshot(steps[victim])

    def _restore(self, step: int, disk_root: str, history: list | None = None) -> None:
        """Make the run the one it was at checkpoint ``step``, its files under ``disk_root``.
        The event ring keeps what ``history`` (default: this run's ring) holds up to that
        point — the same events, the history up to a checkpoint being one."""
        if history is None:
            history = self.cluster.events.envelopes
        current = self._snapshots.get(self._on_disk) if disk_root == self.disk_root else None
        cluster, checker = self._snapshots[step].restore(disk_root, self._store,
                                                         current.files if current is not None else None)
        self._on_disk = step
        events = cluster.events
        # Only a history that reaches the checkpoint leaves no hole (a checkpoint ahead of
        # the ring's newest event starts an empty ring: the events between were dropped).
        kept = [e for e in history if e.seq <= events.seq] if history and history[-1].seq >= events.seq else []
        if events.keep is not None:
            kept = kept[-events.keep:]
        events.envelopes = kept
        self.world = cluster
        self.checker = checker
        if checker is not None:
            checker.attach(cluster.events)
            self._reader = ReplicaReader(cluster.events)
        self.position = step      # results (of the whole log) stay: replay gives the same ones
        if self.outside is not None:
            self.outside.after(self)

    def checkpoint(self) -> None:
        """Take a checkpoint at the current position, unless one is there (a run whose
        ``snapshot_every`` is large takes them where its user says: a lesson at the end of
        each of its steps, after the frame has left)."""
        if self.position not in self._snapshots and not self._outside_taken():
            self._take_snapshot()

    def _outside_taken(self) -> bool:
        """Whether what changed the world outside the commands is in it now: a checkpoint
        would then hold what no command makes again (a client's connection mid-request)."""
        return self.outside is not None and bool(self.outside.taken)

    def disk_changed(self) -> None:
        """Files of the data directory changed outside the run's commands (a wire client of
        the served cluster wrote them): the next restore rewrites every file."""
        self._on_disk = None

    def snapshot_steps(self) -> list[int]:
        return sorted(self._snapshots)

    def seek(self, step: int) -> None:
        """Put the run at ``step`` (0 = before the first command, ``len(log)`` = the end)
        by restoring the nearest snapshot at or before it and replaying."""
        if not 0 <= step <= len(self.log):
            raise InvalidRequestError(f"step {step} is outside the run: 0..{len(self.log)}")
        base = max(k for k in self._snapshots if k <= step)
        # Going back needs a snapshot; going forward restores one only if it saves replaying.
        if step < self.position or base > self.position:
            self._restore(base, self.disk_root)
        while self.position < step:
            self._apply(self.rules.parse(self.log[self.position]))

    rewind = seek

    def fork(self, disk_root: str, step: int | None = None) -> "Run":
        """A new run in ``disk_root`` with this run's seed, config and history up to
        ``step`` (default: the current position); the two evolve independently."""
        step = self.position if step is None else step
        if not 0 <= step <= len(self.log):
            raise InvalidRequestError(f"step {step} is outside the run: 0..{len(self.log)}")
        if str(disk_root) == self.disk_root:
            raise InvalidRequestError("a fork needs its own data directory")
        if os.path.isdir(disk_root) and os.listdir(disk_root):
            # Restoring a snapshot replaces everything in the directory.
            raise InvalidRequestError(f"the data directory {disk_root} is not empty; a fork starts from nothing")
        other = Run.__new__(Run)
        other.seed, other.config, other.disk_root = self.seed, self.config, str(disk_root)
        other.snapshot_every, other.max_snapshots = self.snapshot_every, self.max_snapshots
        other.world_cls, other.scenario, other.rules = self.world_cls, self.scenario, self.rules
        other._reader = None
        other.outside = None
        other.log = [dict(c) for c in self.log[:step]]
        other.results = list(self.results[:step])
        other._store = BlockStore()
        other._on_disk = None
        other._snapshots = {k: cp.adopt(self._store, other._store) for k, cp in self._snapshots.items() if k <= step}
        other._restore(max(other._snapshots), other.disk_root, history=self.cluster.events.envelopes)
        while other.position < step:
            other._apply(other.rules.parse(other.log[other.position]))
        return other

    # ---- results ----------------------------------------------------------------------
    def event_digest(self) -> str:
        return self.cluster.events.digest()

    def finish(self) -> list[dict]:
        """The final check (divergence among every settled live replica, not only the ISR),
        recorded in the checker and emitted into the event stream like any finding."""
        return self.checker.check(cluster_views(self.cluster, reader=self._reader), final=True)

    def summary(self) -> dict[str, Any]:
        """Everything a reader needs to judge the run, as plain JSON (see docs/commands.md).
        The final check is run on a copy of the checker, so asking for a summary changes
        neither the event stream nor the run."""
        probe = pickle.loads(pickle.dumps(self.checker))
        probe.check(cluster_views(self.cluster, reader=self._reader), final=True)
        return build_summary(self, probe)


class BlockStore:
    """File contents of checkpoints, cut into ``BLOCK``-byte blocks, each stored once
    (zlib-compressed) under its BLAKE2b digest with a count of the checkpoints using it:
    unchanged data is shared between checkpoints, and a block goes when the last
    checkpoint holding it does."""

    BLOCK = 1024

    def __init__(self) -> None:
        self._blocks: dict[bytes, list] = {}     # digest -> [compressed bytes, references, the digest]

    def put(self, data: bytes) -> tuple:
        keys = []
        blocks = self._blocks
        for i in range(0, len(data), self.BLOCK):
            chunk = data[i:i + self.BLOCK]
            key = hashlib.blake2b(chunk, digest_size=16).digest()
            entry = blocks.get(key)
            if entry is None:
                blocks[key] = [zlib.compress(chunk, 1), 1, key]
            else:
                entry[1] += 1
                key = entry[2]        # the stored key object: checkpoints share it, not a copy each
            keys.append(key)
        return tuple(keys)

    def get(self, keys: tuple) -> bytes:
        blocks = self._blocks
        return b"".join(zlib.decompress(blocks[k][0]) for k in keys)

    def release(self, keys: tuple) -> None:
        blocks = self._blocks
        for k in keys:
            entry = blocks[k]
            entry[1] -= 1
            if entry[1] == 0:
                del blocks[k]

    def copy_from(self, other: "BlockStore", keys: tuple) -> None:
        """Reference ``keys`` here, taking the (immutable) blocks from ``other``."""
        for k in keys:
            entry = self._blocks.get(k)
            if entry is None:
                self._blocks[k] = [other._blocks[k][0], 1, k]
            else:
                entry[1] += 1

    @property
    def nbytes(self) -> int:
        return sum(len(e[0]) for e in self._blocks.values())

    def __len__(self) -> int:
        return len(self._blocks)


@dataclass
class Checkpoint:
    """One step's full state: the cluster and checker pickled without the event history
    and compressed, and each file as (size, is_dir, block digests) in a :class:`BlockStore`."""

    step: int
    state: bytes
    files: dict       # path -> (size, is_dir, keys)
    durable: dict

    @classmethod
    def take(cls, step: int, cluster: Any, checker: Checker, store: BlockStore,
             previous: dict | None = None) -> "Checkpoint":
        events = cluster.events
        # The history is not part of a checkpoint; its rows stay rows (nothing is formatted).
        ring, first_row = events._ring, events._first_row
        events._ring, events._first_row = [], None
        try:
            state = zlib.compress(pickle.dumps({"cluster": cluster, "checker": checker},
                                               protocol=pickle.HIGHEST_PROTOCOL), 1)
        finally:
            events._ring, events._first_row = ring, first_row
        files = {}
        for rel, image in cluster.disk.capture().items():
            entry = (image.size, image.is_dir, store.put(image.data))
            before = previous.get(rel) if previous is not None else None
            # A file unchanged since ``previous`` shares its entry (the memory of a checkpoint
            # is then little more than what changed).
            files[sys.intern(rel)] = before if before == entry else entry
        return cls(step, state, files, dict(cluster.disk._durable))

    def restore(self, disk_root: str, store: BlockStore, on_disk: dict | None = None) -> tuple[Any, Checker]:
        """A live (cluster, checker) of this checkpoint whose files live under ``disk_root``.
        ``on_disk``: the files (as a checkpoint lists them) the directory holds now, when
        known; those equal here are left as they are, the others written."""
        data = pickle.loads(zlib.decompress(self.state))
        cluster = data["cluster"]
        cluster.disk.relocate(disk_root)
        keep = {rel for rel, f in self.files.items() if on_disk is not None and on_disk.get(rel) == f}
        cluster.disk.restore({rel: FileImage(size, store.get(keys), is_dir)
                              for rel, (size, is_dir, keys) in self.files.items() if rel not in keep},
                             self.durable, keep=keep)
        return cluster, data["checker"]

    def release(self, store: BlockStore) -> None:
        for _, _, keys in self.files.values():
            store.release(keys)

    def adopt(self, source: BlockStore, target: BlockStore) -> "Checkpoint":
        """This checkpoint for another run whose blocks live in ``target``."""
        for _, _, keys in self.files.values():
            target.copy_from(source, keys)
        return self

    @property
    def nbytes(self) -> int:
        return len(self.state) + sum(16 * len(keys) for _, _, keys in self.files.values())


def _plain(x: Any) -> Any:
    return dataclasses.astuple(x) if dataclasses.is_dataclass(x) else x


# ---- reading the cluster ----------------------------------------------------------------

def log_entries(log: Any) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record of a replica's Log as (offset, leader epoch of its batch, key, value),
    read straight from the segment files (the same bytes a fetch would serve)."""
    out = []
    start, end = log.log_start_offset, log.log_end_offset
    segments = list(log.segments)
    for i, seg in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else end
        if upper <= start or not seg.size:
            continue
        for _, batch in iter_batches(seg.read_all(), verify_crc=False):
            for r in batch.records:
                if start <= r.offset < end:
                    out.append((r.offset, batch.partition_leader_epoch, r.key, r.value))
    return out


class ReplicaReader:
    """Reads replica logs for the checker's views incrementally: records are only appended
    at the log end, so after each command only the new batches are decoded. A truncation,
    a moved log start or a new Log object (restart) makes it read that replica afresh.
    Not part of a snapshot: a restored run gets a new reader."""

    _RESET = ("log_truncated", "log_start_offset_changed", "segment_deleted", "recovery_truncated")

    def __init__(self, events: Any) -> None:
        # (broker, topic, partition) -> [log, entries, digests by offset, leo]. The list and
        # the dict are only ever appended to; a reset replaces them, so the checker can tell
        # "same log, more records" (same objects) from "something changed" (new objects).
        self._cache: dict = {}
        events.subscribe(self._on_event, kinds=self._RESET)

    def _on_event(self, env: Any) -> None:
        ev = env.event
        if ev.kind in self._RESET:
            self._cache.pop((getattr(ev, "broker", None), ev.topic, ev.partition), None)

    def read(self, broker: int, topic: str, partition: int, log: Any) -> tuple[list, dict]:
        """(entries, digests): every (offset, epoch, key, value) and offset → record digest."""
        key = (broker, topic, partition)
        c = self._cache.get(key)
        leo = log.log_end_offset
        if c is None or c[0] is not log or c[3] > leo:
            entries = log_entries(log)
            c = [log, entries, {o: record_digest(k, v) for o, _, k, v in entries}, leo]
            self._cache[key] = c
        elif c[3] < leo:
            new = _entries_from(log, c[3])
            c[1].extend(new)
            c[2].update((o, record_digest(k, v)) for o, _, k, v in new)
            c[3] = leo
        return c[1], c[2]


def _entries_from(log: Any, offset: int) -> list:
    out = []
    end = log.log_end_offset
    while offset < end:
        info = log.read(offset, 1 << 30, trace=False)
        if not info.records:
            break
        for _, batch in iter_batches(info.records, verify_crc=False):
            for r in batch.records:
                if r.offset >= offset:
                    out.append((r.offset, batch.partition_leader_epoch, r.key, r.value))
            offset = max(offset, batch.last_offset + 1)
    return out


def _partition_keys(cluster: Any) -> list[tuple[str, int]]:
    keys = set()
    for t, n in _topics(cluster).items():
        keys.update((t, p) for p in range(n))
    return sorted(keys)


def _controller_state(cluster: Any, topic: str, partition: int) -> tuple[int | None, int | None, tuple, tuple]:
    """(leader, leader epoch, ISR, assigned replicas) as the controller has them."""
    st = cluster.controller.partition(topic, partition)
    leader = st.leader if st.leader is not None and st.leader >= 0 else None
    return leader, st.leader_epoch, tuple(st.isr), tuple(st.replicas)


def cluster_views(cluster: Any, entries: dict | None = None, reader: ReplicaReader | None = None) -> dict:
    """The checker's view of ``cluster``: (topic, partition) → PartitionView. A broker that
    is down shows as a dead replica (its files are not read: recovery would change them)."""
    views = {}
    for topic, p in _partition_keys(cluster):
        leader, epoch, isr, replicas = _controller_state(cluster, topic, p)
        rv = {}
        for b in replicas:
            broker = cluster.brokers[b]
            part = broker.partitions.get((topic, p)) if broker.alive else None
            if part is None:
                rv[b] = ReplicaView(b, False, 0, 0, 0, {})
                continue
            if reader is not None:
                recs, digests = reader.read(b, topic, p, part.log)
            else:
                recs = log_entries(part.log)
                digests = {o: record_digest(k, v) for o, _, k, v in recs}
            if entries is not None:
                entries[(topic, p, b)] = recs
            settled = part.role == "leader" or (part.role == "follower"
                                                 and part.fetcher.state_name == "fetching")
            rv[b] = ReplicaView(b, True, part.log.log_start_offset, part.leo, part.hw, digests,
                                part.role, part.leader_epoch, broker.incarnation, settled)
        views[(topic, p)] = PartitionView(topic, p, leader, epoch, isr, rv)
    return views


def build_summary(run: Run, checker: Checker | None = None) -> dict[str, Any]:
    cluster = run.cluster
    checker = checker or run.checker
    entries: dict = {}
    views = cluster_views(cluster, entries, reader=run._reader)
    acked_by_tp: dict = {}
    for a in checker.acked:
        acked_by_tp.setdefault((a.topic, a.partition), []).append(a)
    lost = {(f["topic"], f["partition"], f["offset"], f["digest"]) for f in checker.findings
            if f["kind"] == "check_acked_record_lost"}
    partitions = []
    for (topic, p), pv in sorted(views.items()):
        replicas = []
        for b, rv in sorted(pv.replicas.items()):
            if not rv.alive:
                replicas.append({"broker": b, "alive": False})
                continue
            part = cluster.brokers[b].partitions[(topic, p)]
            replicas.append({
                "broker": b, "alive": True, "role": part.role,
                "log_start_offset": rv.log_start_offset, "leo": rv.leo, "high_watermark": rv.high_watermark,
                "epoch_cache": [[e.epoch, e.start_offset] for e in part.log.leader_epoch_cache.entries],
                "records": [{"offset": o, "epoch": e, "digest": record_digest(k, v), "key": _text(k),
                             "value": _text(v)} for o, e, k, v in entries[(topic, p, b)]],
            })
        lr = pv.leader_replica()
        acked = []
        for a in sorted(acked_by_tp.get((topic, p), []), key=lambda a: (a.offset, a.request_id or 0)):
            acked.append({"offset": a.offset, "digest": a.digest, "value": a.value, "acks": a.acks,
                          "request_id": a.request_id,
                          "present": None if lr is None else lr.records.get(a.offset) == a.digest,
                          "lost": (topic, p, a.offset, a.digest) in lost})
        partitions.append({"topic": topic, "partition": p, "leader": pv.leader, "leader_epoch": pv.leader_epoch,
                           "isr": list(pv.isr), "high_watermark": None if lr is None else lr.high_watermark,
                           "replicas": replicas, "acknowledged": acked,
                           "diverged": any(f["kind"] == "check_replicas_diverged" and f["topic"] == topic
                                           and f["partition"] == p for f in checker.findings)})
    produce = []
    for rid in sorted(checker.requests):
        req = checker.requests[rid]
        out = req["outcome"]
        produce.append({"request_id": rid, "topic": req["topic"], "partition": req["partition"],
                        "acks": req["acks"], "records": len(req["digests"]),
                        "result": None if out is None else ("acked" if out["kind"] == "produce_acked" else "failed"),
                        "error": None if out is None else out.get("error"),
                        "base_offset": None if out is None else out.get("base_offset")})
    check = checker.summary()
    return {
        "seed": run.seed, "truncation": run.config.truncation, "brokers": run.config.brokers,
        "steps": run.position, "time_ms": cluster.scheduler.now_ms(),
        "events": cluster.events.seq, "events_dropped": cluster.events.seq - cluster.events.retained_count(),
        "event_digest": cluster.events.digest(),
        "controller": controller_summary(cluster),
        "alive": [b for b in sorted(cluster.brokers) if cluster.brokers[b].alive],
        "partitions": partitions, "produce": produce,
        "ok": check["ok"], "findings": check["findings"], "finding_counts": check["counts"],
    }


def _controller_id(cluster: Any) -> int | None:
    return cluster.controller.active


def controller_summary(cluster: Any) -> dict[str, Any]:
    """The run summary's ``controller`` object: ``mode`` (hybrid, combined, dedicated),
    ``active`` (node id or None), ``epoch`` (the quorum's; the controller epoch under the
    hybrid controller), ``voters``, the metadata log's high watermark and each node's
    applied metadata offset (both None / empty without a quorum)."""
    ctl = cluster.controller
    describe = getattr(ctl, "describe", None)
    if describe is None:
        return {"mode": "hybrid", "active": ctl.active, "epoch": ctl.epoch, "voters": [],
                "metadata_high_watermark": None, "applied_offsets": {}}
    d = describe()
    return {k: d[k] for k in ("mode", "active", "epoch", "voters", "metadata_high_watermark", "applied_offsets")}


# ---- command logs -------------------------------------------------------------------------

def load_command_log(text: str) -> CommandLog:
    """Parse JSONL: one command per line; blank and ``#`` lines skipped; an optional first
    object without ``cmd`` is a header ``{"seed": N, "config": {...}}``."""
    seed, config, commands = None, {}, []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        data = json_input.loads(line, f"line {lineno}")
        if isinstance(data, dict) and "cmd" not in data and not commands and seed is None and not config:
            unknown = sorted(set(data) - {"seed", "config"})
            if unknown:
                raise InvalidRequestError(f"line {lineno}: a header takes seed and config, not {', '.join(unknown)}")
            if "seed" in data and (isinstance(data["seed"], bool) or not isinstance(data["seed"], int)):
                raise InvalidRequestError(f"line {lineno}: seed must be an integer, got {data['seed']!r}")
            if not isinstance(data.get("config", {}), dict):
                raise InvalidRequestError(f"line {lineno}: config must be an object")
            seed, config = data.get("seed"), dict(data.get("config", {}))
            continue
        try:
            commands.append(parse_command(data))
        except KafkaError as exc:
            exc.args = (f"line {lineno}: {exc}",)
            raise
    return CommandLog(seed, config, tuple(commands))


def dump_command_log(commands: Iterable[Mapping[str, Any] | Command], *, seed: int | None = None,
                     config: Mapping[str, Any] | None = None) -> str:
    """The JSONL form of a command log (with a header when seed or config is given)."""
    lines = []
    if seed is not None or config:
        header: dict[str, Any] = {}
        if seed is not None:
            header["seed"] = seed
        if config:
            header["config"] = dict(config)
        lines.append(json.dumps(header, sort_keys=True))
    for c in commands:
        d = command_to_dict(c) if isinstance(c, Command) else dict(c)
        lines.append(json.dumps(d, sort_keys=True))
    return "\n".join(lines) + "\n"


def run_commands(log: CommandLog | Iterable[Mapping[str, Any] | Command], *, seed: int | None = None,
                 truncation: str | None = None, brokers: int | None = None, disk_root: str,
                 config: Mapping[str, Any] | None = None, fetch_protocol: str | None = None,
                 kraft: bool | None = None, controllers: int | None = None) -> dict[str, Any]:
    """Execute a command log on a fresh cluster and return its summary."""
    if not isinstance(log, CommandLog):
        log = CommandLog(None, {}, tuple(c if isinstance(c, Command) else parse_command(dict(c)) for c in log))
    base = dict(log.config)
    base.update(config or {})
    cfg = make_config(base, truncation=truncation, brokers=brokers, fetch_protocol=fetch_protocol,
                      kraft=kraft, controllers=controllers)
    run = Run(seed if seed is not None else (log.seed or 0), cfg, disk_root)
    for i, cmd in enumerate(log.commands):
        try:
            run.apply(cmd)
        except KafkaError as exc:
            exc.args = (f"command {i + 1} ({cmd.cmd}): {exc}",)
            raise
    return run.summary()


def format_summary(summary: dict[str, Any]) -> str:
    """A human-readable rendering of :func:`build_summary`'s dict (findings in the
    narration's words, engine/narration.py)."""
    from ..narration import finding_text
    lines = [f"seed {summary['seed']}  truncation {summary['truncation']}  brokers {summary['brokers']}  "
             f"steps {summary['steps']}  time {summary['time_ms']} ms  events {summary['events']}",
             f"event digest {summary['event_digest']}"]
    if "scenario" in summary:
        sc = summary["scenario"]
        lines.insert(0, f"scenario {sc['name']}: {sc['title']}")
    for p in summary["partitions"]:
        lines.append(f"{p['topic']}-{p['partition']}: leader {p['leader']} epoch {p['leader_epoch']} "
                     f"ISR {p['isr']} HW {p['high_watermark']}")
        for r in p["replicas"]:
            if not r["alive"]:
                lines.append(f"  broker {r['broker']}: down")
                continue
            recs = " ".join(f"{x['value'] if x['value'] is not None else x['digest']}@{x['offset']}({x['epoch']})"
                            for x in r["records"][:20])
            more = f" … (+{len(r['records']) - 20})" if len(r["records"]) > 20 else ""
            lines.append(f"  broker {r['broker']} {r['role']:<8} LEO {r['leo']} HW {r['high_watermark']} "
                         f"epochs {r['epoch_cache']}  [{recs}{more}]")
        if p["acknowledged"]:
            lines.append("  acknowledged: " + " ".join(
                f"{a['value'] if a['value'] is not None else a['digest']}@{a['offset']}" for a in p["acknowledged"]))
        for a in p["acknowledged"]:
            if a["lost"]:
                lines.append(f"  LOST acknowledged record {a['value']!r} at offset {a['offset']} "
                             f"(digest {a['digest']})")
    for r in summary["produce"]:
        outcome = {"acked": f"acked at {r['base_offset']}", "failed": f"failed {r['error']}",
                   None: "no answer yet"}[r["result"]]
        lines.append(f"produce #{r['request_id']} {r['topic']}-{r['partition']} acks={r['acks']} "
                     f"{r['records']} record(s): {outcome}")
    for f in summary["findings"]:
        lines.append(f"finding {f['kind']}: {finding_text(f)}")
    if "verdict" in summary:
        v = summary["verdict"]
        lines.append(f"expected ({v['truncation']}): {'MATCHES' if v['matches'] else 'DIFFERS'}"
                     + "".join(f"\n  - {m}" for m in v["mismatches"]))
    ctl = summary.get("controller")
    if isinstance(ctl, dict) and ctl.get("mode") != "hybrid":
        lines.append(f"controller ({ctl['mode']}): active {ctl['active']} epoch {ctl['epoch']} voters {ctl['voters']} "
                     f"metadata HW {ctl['metadata_high_watermark']} applied {ctl['applied_offsets']}")
    lines.append("checker: OK" if summary["ok"] else f"checker: {len(summary['findings'])} finding(s)")
    return "\n".join(lines)
