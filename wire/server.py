"""The listener: one loopback port per engine broker, speaking Kafka's protocol.

:class:`WireServer` owns an engine :class:`~engine.cluster.Cluster` whose virtual clock
starts at the wall clock's epoch time and then follows it at speed 1 (:class:`Pacer`:
the scheduler is run up to "now" whenever a request arrives and whenever its next task
falls due). The wall clock is read here, never in ``engine/``.

Each request is handled where it arrives, in order per connection; every decoded request
is appended to the :class:`Recorder` with its virtual arrival time, the connection's node
and broker, so a run can be replayed: the same requests injected at the same virtual
times into a cluster built from the same seed give the same event stream (the scheduler
is deterministic and nothing else enters it; :mod:`wire.replay`).
"""
from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from engine.clock import VirtualClock
from engine.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk
from engine.errors import KafkaError
from engine.events import EventLog

from .protocol import (MAX_FRAME_BYTES, ProtocolError, Unsupported, encode_response, frame_size, parse_request,
                       unsupported_response)
from .session import FIRST_NODE_ID, Session

__all__ = ["WireServer", "Pacer", "Recorder", "Closed", "apply_operation", "wall_ms", "json_row", "frame_bytes"]

log = logging.getLogger("wire")


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class Pacer:
    """Moves the engine's clock with the wall clock (speed 1, no jumps: every task runs at
    its own due time, in order, as the wall clock passes it).

    A timer of the event loop, not a task: it is armed for the engine's next due task (at
    most 50 ms ahead) and re-armed by each request (``wake``). A request at 1 ms latency
    needs the loop at its arrival, at the broker a millisecond later and back a millisecond
    after that; a task waiting in ``asyncio.timeout`` cost two loop turns per wake (the
    timeout's callback, then the task's step) and a ``kick`` one more, about 7 turns and
    0.43 ms of CPU a request where 3 turns do (bench/bench_wire.py, linger.ms=0)."""

    first_delay = 0.0         # seconds before the first turn

    def __init__(self, cluster: Cluster, clock: Callable[[], int] = wall_ms,
                 guard: Callable[[], Any] = contextlib.nullcontext) -> None:
        self.cluster = cluster
        self.clock = clock
        self.guard = guard
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._stopped = False

    def catch_up(self) -> int:
        """Run everything due up to the wall clock's now; return the virtual now."""
        sched = self.cluster.scheduler
        target = self.clock()
        # ">=": tasks due right now run too (a zero-latency network delivers in the same ms).
        # (A task may be due at 0 ms: a served cluster whose clock started at 0, the sandbox's.)
        while target >= sched.now_ms() and _due_by(sched.next_due_ms(), target):
            try:
                sched.run_until(target)
            except Exception:   # an engine bug must not stop the clock for every client
                log.exception("engine task failed at %d ms", sched.now_ms())
        if target > sched.now_ms():
            sched.clock.advance_to(target)
        # The disk gathers small appends (write-behind); what this step wrote reaches the OS
        # before any answer goes out, so a killed listener loses no acknowledged byte.
        self.cluster.disk.flush()
        return sched.now_ms()

    def wake(self, due: int | None) -> None:
        """Be back by the engine task due at ``due`` (virtual ms; None: nothing due), on the
        loop's thread."""
        loop = self._loop
        if loop is None or self._stopped:
            return
        # The wall clock's whole ms: never early (an early turn would find nothing due and
        # cost a turn more), at most a millisecond late.
        delay = 0.05 if due is None else min(0.05, max(0.0, (due - self.clock()) / 1000))
        when = loop.time() + delay
        handle = self._handle
        if handle is not None:
            if handle.when() <= when:
                return
            handle.cancel()
        self._handle = loop.call_at(when, self._turn)

    def kick(self) -> None:
        """Take a turn now (on the loop's thread)."""
        self.wake(-1)

    def _turn(self) -> None:
        self._handle = None
        try:
            with self.guard():
                self.catch_up()
                due = self.cluster.scheduler.next_due_ms()
        except Closed:
            self._stopped = True       # the cluster is no longer served
            return
        except Exception:              # never stop the clock for every client
            log.exception("pacer turn failed")
            due = None
        self.wake(due)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = False
        self._handle = self._loop.call_later(self.first_delay, self._turn)

    async def stop(self) -> None:
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _settle(done: asyncio.Future, body: Any) -> None:
    if not done.done():
        done.set_result(body)


def _due_by(due: int | None, target: int) -> bool:
    return due is not None and due <= target


class Recorder:
    """Every decoded request with its virtual arrival time, in arrival order, plus the
    opening and closing of connections: JSON lines (``path``) and/or kept in memory (a
    request's ``frame`` as bytes there, as base64 text in the file: :func:`json_row`).

    In memory only the newest ``max_entries`` are kept (``dropped`` counts the rest), so a
    long-running listener's memory is bounded; the file, when there is one, has them all."""

    MAX_ENTRIES = 100_000

    def __init__(self, path: Path | None = None, keep: bool = True, max_entries: int = MAX_ENTRIES) -> None:
        self.entries: collections.deque[dict] = collections.deque(maxlen=max_entries)
        self.keep = keep
        self.dropped = 0
        self._file = open(path, "a", encoding="utf-8") if path is not None else None

    def add(self, entry: dict) -> None:
        if self.keep:
            if len(self.entries) == self.entries.maxlen:
                self.dropped += 1
            self.entries.append(entry)
        if self._file is not None:
            self._file.write(json.dumps(json_row(entry), separators=(",", ":")) + "\n")

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def json_row(entry: dict) -> dict:
    """A record entry as its JSON line has it: a request's ``frame`` (the request's bytes, kept
    as they came off the socket in memory: encoding a large Produce frame on every request
    cost the listener about a twentieth of its CPU) as base64 text."""
    frame = entry.get("frame")
    if isinstance(frame, (bytes, bytearray)):
        return {**entry, "frame": base64.b64encode(frame).decode("ascii")}
    return entry


def frame_bytes(entry: dict) -> bytes:
    """A request entry's frame, from memory (bytes) or from a JSON line (base64)."""
    frame = entry["frame"]
    return frame if isinstance(frame, (bytes, bytearray)) else base64.b64decode(frame)


def apply_operation(cluster: Cluster, cmd: dict) -> dict:
    """An operator's engine command; ``cut_link`` / ``heal_link`` may also name a client
    connection's node (from :data:`~wire.session.FIRST_NODE_ID`), which the engine's own
    command vocabulary (brokers and -1) does not know."""
    from engine.cluster.commands import apply_command
    if cmd.get("cmd") in ("cut_link", "heal_link") and max(cmd["a"], cmd["b"]) >= FIRST_NODE_ID:
        both = bool(cmd.get("both", True))
        if cmd["cmd"] == "cut_link":
            cluster.network.cut(cmd["a"], cmd["b"], both)
        else:
            cluster.network.heal(cmd["a"], cmd["b"], both)
        return {}
    return apply_command(cluster, dict(cmd))


class _Gone(Exception):
    """The connection's broker died or the client went away while a request waited."""


class Closed(Exception):
    """Raised by a ``guard`` whose cluster is no longer served (its sandbox closed): the
    connection, or the pacer, ends."""


class WireServer:
    """``brokers`` engine brokers, each listening on ``host:port + id``."""

    def __init__(self, data_dir: str | Path, brokers: int = 3, host: str = "127.0.0.1", port: int = 9092,
                 seed: int = 0, start_ms: int | None = None, clock: Callable[[], int] = wall_ms,
                 auto_create_topics: bool = True, num_partitions: int = 1, default_replication_factor: int = 1,
                 network_latency_ms: int = 1, max_frame_bytes: int = MAX_FRAME_BYTES,
                 record_path: Path | None = None, max_connections_per_address: int = 100,
                 connections_max_idle_ms: int = 600_000, cluster_config: dict | None = None,
                 max_requests_per_second_per_address: float = 10_000.0, checker: bool = False,
                 cluster: Cluster | None = None, trace: bool = False,
                 guard: Callable[[], Any] = contextlib.nullcontext,
                 advertise: tuple[str, int | None] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.host, self.base_port = host, port
        self.clock = clock
        start = clock() if start_ms is None else start_ms
        self.start_ms = start
        self.seed = seed
        self.cluster_config = dict(cluster_config or {})
        self.config = ClusterConfig.from_mapping({"brokers": brokers, "network_latency_ms": network_latency_ms,
                                                  **(cluster_config or {})})
        # ``cluster``: serve a cluster somebody else built and drives too (the web sandbox's);
        # ``guard()`` is then held around every engine call (the engine is single-threaded),
        # and ``trace`` makes connections, requests and answers engine events.
        self.trace = trace
        self.guard = guard
        if cluster is None:
            events = EventLog(VirtualClock(start), keep=100_000)
            cluster = Cluster(Disk(self.data_dir / "cluster"), self.config, seed=seed, events=events)
        else:
            events = cluster.events
        self.cluster = cluster
        self.auto_create_topics = auto_create_topics
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.max_frame_bytes = max_frame_bytes
        self.max_connections_per_address = max_connections_per_address
        self.connections_max_idle_ms = connections_max_idle_ms     # Kafka's connections.max.idle.ms
        # A token bucket per client address (burst: one second's worth). A client over it is
        # slowed, not cut off, as Kafka's request quotas mute a channel for the throttle time.
        self.request_rate = max_requests_per_second_per_address
        self._buckets: dict[str, list[float]] = {}      # address -> [tokens, wall seconds]
        # What Metadata and FindCoordinator tell clients (Kafka's advertised.listeners), and what
        # each broker's socket is bound to (``listening``). ``advertise`` = (host, port or None):
        # for a listener behind a proxy or NAT, broker b advertises host:(port + b), or host with
        # its own bound port when no port is given; by default what is bound is advertised.
        self.advertise = advertise
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.listening: dict[int, tuple[str, int]] = {}
        self.recorder = Recorder(record_path)
        # The engine's checker (engine/cluster/checker.py), told of every record a client was
        # acknowledged: check() then finds acknowledged records lost, diverged replicas, HW
        # regressions. Off by default: it decodes every acknowledged batch.
        self.checker = None
        if checker:
            from engine.cluster.checker import Checker
            self.checker = Checker()
            self.checker.attach(events)
        self.pacer = Pacer(self.cluster, clock, guard)
        self._servers: list[asyncio.base_events.Server] = []
        self._sessions: dict[int, tuple[Session, asyncio.StreamWriter]] = {}
        self._peers: dict[int, str] = {}       # node id -> client address, of live connections
        self._next_node = FIRST_NODE_ID
        self._tasks: set[asyncio.Task] = set()
        # SyncGroup: the leader's assignment bytes per (group, generation, member), handed to
        # each member as sent (the coordinator keeps only the partitions)
        self.assignments: dict[tuple[str, int, str], bytes] = {}

    def settings(self) -> dict:
        """What a replay needs to build the same cluster (:func:`wire.replay.replay`)."""
        return {"brokers": len(self.cluster.brokers), "seed": self.seed, "start_ms": self.start_ms,
                "network_latency_ms": self.config.network_latency_ms, "num_partitions": self.num_partitions,
                "default_replication_factor": self.default_replication_factor,
                "auto_create_topics": self.auto_create_topics, "cluster_config": self.cluster_config,
                "trace": self.trace}

    # ---- engine helpers -------------------------------------------------------------
    def next_request_id(self) -> int:
        return self.cluster.next_request_id()

    def auto_create(self, name: str) -> str | None:
        """Kafka's auto.create.topics.enable: num.partitions, default.replication.factor."""
        alive = sum(1 for b in self.cluster.brokers.values() if b.alive)
        try:
            self.cluster.create_topic(name, self.num_partitions, max(1, min(self.default_replication_factor, alive)))
        except KafkaError as exc:
            return getattr(exc, "name", "INVALID_TOPIC_EXCEPTION")
        self.recorder.add({"t": self.cluster.now_ms(), "kind": "auto_create", "topic": name,
                           "partitions": self.num_partitions})
        return None

    def create_topic(self, name: str, partitions: int, replication_factor: int, config: dict | None = None,
                     assignment: dict | None = None, via_request: bool = False) -> None:
        """The operator's or (``via_request``) a CreateTopics request's topic, recorded; a replay
        makes the latter again from the request itself."""
        self.cluster.create_topic(name, partitions, replication_factor, config, assignment)
        self.recorder.add({"t": self.cluster.now_ms(), "kind": "create_topic", "topic": name,
                           "partitions": partitions, "replication_factor": replication_factor,
                           "config": config or {},
                           "assignment": {str(k): v for k, v in assignment.items()} if assignment else None,
                           "via_request": via_request})

    def operate(self, cmd: dict) -> dict:
        """An operator's engine command (``engine/cluster/commands.py``: crash, cut_link, ...)
        applied now and recorded, so a replay applies it at the same virtual time."""
        cmd = dict(cmd)
        result = apply_operation(self.cluster, cmd)
        self.recorder.add({"t": self.cluster.now_ms(), "kind": "command", "cmd": cmd})
        return result

    def mark(self, name: str) -> int:
        """A named point of the record (a lesson's step ends here); returns its virtual time."""
        now = self.cluster.now_ms()
        self.recorder.add({"t": now, "kind": "mark", "name": name})
        return now

    def check(self, final: bool = False) -> list[dict]:
        """The checker's new findings against the cluster now (needs ``checker=True``)."""
        from engine.cluster.run import cluster_views
        return self.checker.check(cluster_views(self.cluster), final=final)

    def note_acked(self, topic: str, partition: int, base_offset: int, acks: int, request_id: int,
                   records: bytes) -> None:
        """A client was told ``records`` (its batch bytes) were written from ``base_offset``."""
        if self.checker is None:
            return
        from engine.cluster.checker import AckedRecord
        from engine.cluster.partition import record_digest
        from engine.records import iter_batches
        rows = []
        for _, batch in iter_batches(records, verify_crc=False):
            rows.extend(AckedRecord(topic, partition, base_offset + len(rows), record_digest(r.key, r.value), acks,
                                    request_id) for r in batch.records)
        self.checker.note_acked(rows)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for _, (h, p) in sorted(self.endpoints.items()))

    # ---- lifecycle ------------------------------------------------------------------
    async def start(self) -> None:
        for b in sorted(self.cluster.brokers):
            srv = await asyncio.start_server(lambda r, w, b=b: self._serve(b, r, w), self.host,
                                             self.base_port + b if self.base_port else 0, limit=1 << 16)
            port = srv.sockets[0].getsockname()[1]
            self.listening[b] = (self.host, port)
            if self.advertise is None:
                self.endpoints[b] = (self.host, port)
            else:
                host, base = self.advertise
                self.endpoints[b] = (host, port if base is None else base + b)
            self._servers.append(srv)
        # Answers carry the endpoints (Metadata, FindCoordinator): a replay needs them too.
        self.recorder.add({"t": self.cluster.now_ms(), "kind": "listen",
                           "endpoints": {str(b): [h, p] for b, (h, p) in sorted(self.endpoints.items())},
                           "settings": self.settings()})
        self.pacer.start()

    async def stop(self) -> None:
        for srv in self._servers:
            srv.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for srv in self._servers:
            await srv.wait_closed()
        await self.pacer.stop()
        self.recorder.close()

    # ---- connections ----------------------------------------------------------------
    async def _serve(self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        node_id = self._next_node
        self._next_node += 1
        task = asyncio.current_task()
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        peer = (writer.get_extra_info("peername") or ("?",))[0]
        with self.guard():
            now = self.pacer.catch_up()
            # Counted from the live connections themselves, so nothing but a live socket holds a place.
            if not self.cluster.brokers[broker_id].alive or \
                    sum(1 for a in self._peers.values() if a == peer) >= self.max_connections_per_address:
                writer.close()
                return
            session = Session(self, broker_id, node_id)
            self._sessions[node_id] = (session, writer)
            self._peers[node_id] = peer
            self.recorder.add({"t": now, "kind": "connect", "node": node_id, "broker": broker_id})
        try:
            await self._loop(session, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, _Gone, Closed):
            pass
        except ProtocolError as exc:
            log.info("closing connection %s: %s", node_id, exc)
        except asyncio.CancelledError:
            pass       # the listener is stopping (a cancelled handler task upsets asyncio's stream callback)
        finally:
            writer.close()
            try:
                # Gone from the connections and closed in the engine at one moment (the guard
                # held): a served run's pacer and link mirror see it go where its record says.
                with self.guard():
                    self._forget(node_id, peer)
                    session.close()
                    self.recorder.add({"t": self.cluster.now_ms(), "kind": "disconnect", "node": node_id})
            except Closed:
                self._forget(node_id, peer)

    def _forget(self, node_id: int, peer: str) -> None:
        self._sessions.pop(node_id, None)
        self._peers.pop(node_id, None)
        if peer not in self._peers.values():
            self._buckets.pop(peer, None)     # the bucket lives as long as a connection from there

    async def _loop(self, session: Session, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        owner = threading.get_ident()
        watch = _Watch(self, session, reader, writer, self.connections_max_idle_ms / 1000)
        try:
            while True:
                head = await reader.readexactly(4)
                size = frame_size(head, self.max_frame_bytes)
                frame = await reader.readexactly(size)
                watch.last = loop.time()
                wait = self._take_token(self._peers.get(session.node.id, "?"))
                if wait > 0:
                    await asyncio.sleep(wait)
                try:
                    req = parse_request(frame)
                except Unsupported as exc:
                    with self.guard():
                        now = self.pacer.catch_up()
                        self.recorder.add({"t": now, "kind": "unsupported", "node": session.node.id,
                                           "api_key": exc.api_key, "version": exc.version})
                    answer = unsupported_response(exc)
                    if answer is None:
                        raise ProtocolError(str(exc)) from None
                    writer.write(answer)
                    await writer.drain()
                    watch.last = loop.time()
                    continue
                done = loop.create_future()

                def reply(body: dict | None, done=done) -> None:
                    # A served cluster's owner may run the scheduler in its own thread (a sandbox
                    # learner's advance delivers the answer): a future is set on its loop's thread.
                    if threading.get_ident() != owner:
                        loop.call_soon_threadsafe(_settle, done, body)
                    else:
                        _settle(done, body)
                with self.guard():
                    now = self.pacer.catch_up()
                    if not self.cluster.brokers[session.broker_id].alive:
                        return                      # the broker process is gone: its sockets are too
                    self.recorder.add({"t": now, "kind": "request", "node": session.node.id,
                                       "broker": session.broker_id, "api_key": req.api_key,
                                       "version": req.api_version, "correlation_id": req.correlation_id,
                                       "frame": frame})
                    session.dispatch(req, reply)
                    if req.api_key == 0 and req.body["acks"] == 0:
                        reply(None)                 # acks=0: the client expects no answer at all
                    self.pacer.catch_up()           # what is due now (with zero latency, the whole answer)
                    due = self.cluster.scheduler.next_due_ms()
                self.pacer.wake(due)
                watch.pending = done
                try:
                    body = await done
                finally:
                    watch.pending = None
                if body is not None:
                    writer.write(encode_response(req.api_key, req.api_version, req.correlation_id, body))
                    await writer.drain()
                watch.last = loop.time()
        except asyncio.IncompleteReadError:
            if watch.idle:
                log.info("closing idle connection %s", session.node.id)
                return
            raise
        finally:
            watch.cancel()

    def _take_token(self, peer: str) -> float:
        """Seconds to wait before this address's next request may be handled."""
        now = time.monotonic()
        bucket = self._buckets.setdefault(peer, [self.request_rate, now])
        bucket[0] = min(self.request_rate, bucket[0] + (now - bucket[1]) * self.request_rate)
        bucket[1] = now
        bucket[0] -= 1
        return 0.0 if bucket[0] >= 0 else -bucket[0] / self.request_rate


class _Watch:
    """One timer per connection, every half second (at most the idle limit), in place of a
    timeout around every read and a timer around every answer (cancelled timers filled the
    loop's heap, two a request): a request waiting for its answer gives up when its broker
    died (Kafka's sockets die with its process) or the client hung up (a lost message is
    otherwise never answered); with none waiting, a connection that has been quiet for
    ``connections.max.idle.ms`` since its last answer is closed."""

    def __init__(self, server: WireServer, session: Session, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, idle_s: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.server, self.session, self.reader, self.writer = server, session, reader, writer
        self.idle_s = idle_s
        self.period = min(0.5, idle_s)
        self.last = self.loop.time()
        self.pending: asyncio.Future | None = None
        self.idle = False
        self.handle = self.loop.call_later(self.period, self._check)

    def _check(self) -> None:
        done = self.pending
        if done is not None:
            if not done.done() and (not self.server.cluster.brokers[self.session.broker_id].alive
                                    or self.reader.at_eof()):
                done.set_exception(_Gone())
        elif self.loop.time() - self.last >= self.idle_s:
            self.idle = True
            self.writer.close()           # the read waiting for the next request ends (no more data comes)
            return
        self.handle = self.loop.call_later(self.period, self._check)

    def cancel(self) -> None:
        self.handle.cancel()
