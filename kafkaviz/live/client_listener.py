""""Connect your own client": a Kafka wire-protocol listener of one sandbox's cluster.

A :class:`ClientPort` belongs to one sandbox kind instance (the ``replication`` kind of the
sandbox page). Opened, it serves the sandbox's own engine cluster with a
:class:`wire.server.WireServer` on an event loop in a thread of its own (as
``wire/threaded.py`` does), one loopback port per broker; Metadata advertises those, so
kcat, confluent-kafka or kafka-python pointed at the bootstrap address produce into the
very partitions the diagrams draw.

Concurrency. The engine is single-threaded, and the runtime runs a sandbox's commands in
worker threads under the sandbox's lock (``Sandbox.lock``). The listener takes the same
lock (its ``guard``) around every engine call -- accepting a connection, dispatching a
request, running the scheduler up to "now" -- so a client's request and a learner's fault
button never interleave. Frames: the engine's events reach the sandbox's frame builder
as any command's do; the port then asks the runtime to flush (``flush_hook``, thread-safe).

Time. While no client is attached the sandbox's clock is the learner's (``advance``); while
one is, it follows the wall clock at speed 1 from where it stood (never backwards, no jump:
:class:`SandboxPacer`).

Lifetime. The port is closed with the sandbox (the kind's ``close``, which the runtime
calls when it reclaims or resets the sandbox): nothing waits for a browser's socket to
say goodbye. Listeners per process are counted from the open ports themselves; with a
port range (hosted mode) each listener takes ``brokers`` consecutive ports of it.

Faults. Each connection is its own network node (``wire/session.py``); the learner's
fault buttons act on the client node (-1), so every change to a link of -1 is mirrored
onto the links of every connection (and a new connection starts with -1's faults).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from django.conf import settings
from django.utils.translation import gettext as _

from wire.server import Closed, Pacer, WireServer, wall_ms
from wire.traffic import mirror_client_links

from .validation import CommandError

__all__ = ["ClientPort", "SandboxPacer", "listener_settings", "enabled", "open_ports", "parse_ports"]

log = logging.getLogger("kafkaviz.client_listener")

CLIENT = -1
NOTIFY_EVERY_S = 0.02          # at most this often the runtime is asked to flush frames

_ports_lock = threading.Lock()
_open: set["ClientPort"] = set()      # open ports of this process (the count of listeners)


def listener_settings() -> dict[str, Any]:
    return dict(getattr(settings, "KAFKAVIZ_CLIENT_LISTENER", {}) or {})


def enabled() -> bool:
    return bool(listener_settings().get("ENABLED"))


def open_ports() -> int:
    with _ports_lock:
        return len(_open)


def parse_ports(text: str) -> tuple[int, int] | None:
    """``"20000-20999"`` -> (20000, 20999); empty -> None (any free port)."""
    text = (text or "").strip()
    if not text:
        return None
    lo, _, hi = text.partition("-")
    lo_i, hi_i = int(lo), int(hi or lo)
    if not 1 <= lo_i <= hi_i <= 65535:
        raise ValueError(f"KAFKAVIZ_CLIENT_PORTS must be LOW-HIGH within 1-65535, got {text!r}")
    return lo_i, hi_i


class SandboxPacer(Pacer):
    """The sandbox's clock while clients are attached: the wall clock at speed 1, counted
    from the virtual time it stood at when it started following (and from any later
    learner's ``advance`` that put it ahead). Idle (no connection), it moves nothing."""

    def __init__(self, server: "WireServer", guard: Callable[[], Any]) -> None:
        super().__init__(server.cluster, self._target, guard)
        self.server = server
        self.offset: int | None = None

    def _target(self) -> int:
        now = self.cluster.now_ms()
        if not self.server._sessions:
            self.offset = None
            return now
        wall = wall_ms()
        if self.offset is None or wall - self.offset < now:
            self.offset = wall - now
        return wall - self.offset

    # Its first turn waits: the listener is started by a command that holds the sandbox's
    # lock and waits for start() to return; a guard taken first would block the loop that
    # start() needs.
    first_delay = 0.05

    def wake(self, due: int | None) -> None:
        # Idle, the clock stands: a task due a millisecond ahead stays a millisecond ahead,
        # so look again in 50 ms rather than every millisecond.
        super().wake(due if self.server._sessions else None)

    def catch_up(self) -> int:
        if not self.server._sessions:
            self.offset = None
            return self.cluster.now_ms()
        return super().catch_up()


class ClientPort:
    """The listener of one sandbox; ``lock`` is the sandbox's lock, ``notify`` asks the
    runtime to publish what the engine did (called from the listener's thread)."""

    def __init__(self, data_dir: Path, lock: threading.Lock | None, notify: Callable[[], None] | None) -> None:
        self.data_dir = Path(data_dir)
        self.lock = lock if lock is not None else threading.Lock()
        self.notify = notify
        self.gate: _Gate | None = None
        self.server: WireServer | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.cluster: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._last_notify = 0.0
        self._pending = False
        self.opened = 0                # listeners this port started (a rebind starts another)
        # (entry, endpoints) -> None: what the clients did, for the sandbox's run (under its lock)
        self.on_record: Callable[[dict, dict], None] | None = None
        self.first_node: Callable[[], int] | None = None      # the node id its connections start from

    # ---- the guard: the sandbox's lock, refused once this listener is closed -------------
    def _guard_for(self, gate: "_Gate") -> Callable[[], Any]:
        @contextlib.contextmanager
        def guard() -> Iterator[None]:
            while not self.lock.acquire(timeout=0.1):
                if gate.closed:
                    raise Closed("the listener is closed")
            try:
                if gate.closed:
                    raise Closed("the listener is closed")
                with self._notifying(gate.cluster):
                    yield
            finally:
                self.lock.release()
        return guard

    @contextlib.contextmanager
    def _notifying(self, cluster: Any) -> Iterator[None]:
        seq = cluster.events.seq
        try:
            yield
        finally:
            if cluster.events.seq != seq:
                self._pending = True
            self._maybe_notify()

    def _maybe_notify(self) -> None:
        now = time.monotonic()
        if self._pending and self.notify is not None and now - self._last_notify >= NOTIFY_EVERY_S:
            self._pending = False
            self._last_notify = now
            try:
                self.notify()
            except Exception:  # noqa: BLE001 - a closed loop: nobody watches any more
                pass

    # ---- lifecycle (called under the sandbox's lock) -----------------------------------
    @property
    def is_open(self) -> bool:
        return self.server is not None

    def open(self, cluster: Any) -> str:
        """Serve ``cluster``; returns the bootstrap address. Refused (``CommandError``) when
        the feature is off or every listener this process may run is taken."""
        if self.server is not None:
            return self.server.bootstrap
        conf = listener_settings()
        if not conf.get("ENABLED"):
            raise CommandError("forbidden", _("Connecting your own client is off on this server (its operator "
                                              "enables it with a port range)."), command="client_port")
        with _ports_lock:
            if len(_open) >= int(conf.get("MAX_LISTENERS", 20)):
                raise CommandError("busy", _("Every client listener this server runs is taken; try again in a "
                                             "few minutes."), command="client_port")
            _open.add(self)
        try:
            self._start(cluster, conf)
        except BaseException:
            with _ports_lock:
                _open.discard(self)
            raise
        return self.server.bootstrap

    def _start(self, cluster: Any, conf: dict[str, Any]) -> None:
        brokers = len(cluster.brokers)
        self.gate = gate = _Gate(cluster)
        guard = self._guard_for(gate)
        self.cluster = cluster
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=_run_loop, args=(loop,), name="sandbox-wire", daemon=True)
        thread.start()
        ports = parse_ports(conf.get("PORTS", ""))
        bases = [0] if ports is None else self._bases(ports, brokers)
        last_error: Exception | None = None
        for base in bases:
            server = served_server(self.data_dir / "wire", cluster, host=conf.get("HOST", "127.0.0.1"), port=base,
                                   guard=guard,
                                   max_connections_per_address=int(conf.get("MAX_CONNECTIONS_PER_ADDRESS", 20)),
                                   max_requests_per_second_per_address=float(
                                       conf.get("REQUESTS_PER_SECOND_PER_ADDRESS", 500)),
                                   connections_max_idle_ms=int(conf.get("IDLE_MS", 600_000)))
            # What the clients do is the run's (its ``Traffic``, wire/traffic.py): each entry goes
            # to ``on_record`` as it is made, under the sandbox's lock.
            server.recorder = _Forward(self)
            server.pacer = SandboxPacer(server, guard)
            self._number_from(server)
            self.server = server
            try:
                asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
                break
            except OSError as exc:         # a port of the range is taken: the next base
                last_error = exc
                self.server = None
                asyncio.run_coroutine_threadsafe(_close_servers(server), loop).result(10)
        if self.server is None:
            loop.call_soon_threadsafe(loop.stop)
            log.warning("no free ports for a client listener: %s", last_error)
            raise CommandError("busy", _("Every client listener this server runs is taken; try again in a "
                                         "few minutes."), command="client_port")
        self.loop, self.thread = loop, thread
        self._unsubscribe = cluster.events.subscribe(self._on_event, kinds=("link_changed", "client_connected"))
        self.opened += 1

    @staticmethod
    def _bases(ports: tuple[int, int], brokers: int) -> list[int]:
        """Bases whose ``brokers`` ports fit the range; a listener sits on [base, base + n).
        Broker ids start at 0, so broker b listens on base + b."""
        lo, hi = ports
        return list(range(lo, hi - brokers + 2, brokers))

    def close(self) -> None:
        """Stop serving (under the sandbox's lock). Waits for nothing the listener's thread
        holds: the loop finishes on its own once its connections see ``closed``."""
        if self.gate is not None:
            self.gate.closed = True
        server, loop = self.server, self.loop
        self.server = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        with _ports_lock:
            _open.discard(self)
        if server is not None and loop is not None and not loop.is_closed():
            async def shut() -> None:
                try:
                    await server.stop()
                finally:
                    loop.stop()
            asyncio.run_coroutine_threadsafe(shut(), loop)

    def follow(self, cluster: Any) -> None:
        """The sandbox replaced its cluster (a scenario loaded, a shape, an import, a rewind;
        under the sandbox's lock): serve the new one. With no connection attached and as many
        brokers, the same ports serve it; otherwise the listener starts again on new ports
        (its connections close; a client finds the new bootstrap on the page)."""
        server = self.server
        if server is None or cluster is self.cluster:
            return
        if server._sessions or server._tasks or len(cluster.brokers) != len(self.cluster.brokers):
            self.close()
            self.open(cluster)
            return
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.cluster = self.gate.cluster = server.cluster = server.pacer.cluster = cluster
        server.assignments.clear()
        self._number_from(server)
        self._unsubscribe = cluster.events.subscribe(self._on_event, kinds=("link_changed", "client_connected"))

    def _number_from(self, server: WireServer) -> None:
        """New connections take node ids no connection of the run's traffic took."""
        if self.first_node is not None:
            server._next_node = max(server._next_node, self.first_node())

    @property
    def attached(self) -> int:
        server = self.server
        return len(server._sessions) if server is not None else 0

    # ---- faults: the client node's links are every connection's ---------------------
    def _on_event(self, env: Any) -> None:
        ev = env.event
        if ev.kind == "client_connected":
            self._mirror([ev.node])
        elif CLIENT in (ev.a, ev.b):
            self._mirror(self._nodes())

    def _nodes(self) -> list[int]:
        server = self.server
        return sorted(dict(server._sessions)) if server is not None else []     # a copy: the loop's thread pops

    def _mirror(self, nodes: list[int]) -> None:
        mirror_client_links(self.cluster, nodes)

    # ---- what the page shows -------------------------------------------------------
    def state(self) -> dict[str, Any]:
        server = self.server
        if server is None:
            return {"available": enabled(), "open": False}
        return {"available": True, "open": True, "bootstrap": server.bootstrap,
                "endpoints": [[b, h, p] for b, (h, p) in sorted(server.endpoints.items())],
                "connections": [{"node": n, "broker": s.broker_id}
                                for n, (s, _) in sorted(dict(server._sessions).items())]}


def served_server(data_dir: Path, cluster: Any, **kwargs: Any) -> WireServer:
    """A listener of a sandbox's ``cluster`` (no sockets until started): what a live client's
    requests and their replay (an imported run's traffic) are answered by, alike."""
    return WireServer(data_dir, brokers=len(cluster.brokers), cluster=cluster, trace=True, start_ms=cluster.now_ms(),
                      default_replication_factor=min(3, len(cluster.brokers)),
                      # the topics are the sandbox's (its scenario creates t): a client's
                      # Metadata must not make one the scenario's next step then refuses
                      auto_create_topics=False, **kwargs)


def replay_server(data_dir: Path) -> Callable[[Any, dict], WireServer]:
    """``make_server`` of a run's :class:`~wire.traffic.Traffic`: socketless, recording nothing."""
    def make(cluster: Any, endpoints: dict) -> WireServer:
        server = served_server(data_dir, cluster)
        server.recorder.keep = False
        server.endpoints = dict(endpoints)
        return server
    return make


class _Forward:
    """A live listener's record, handed to its port's ``on_record`` (the sandbox's run)."""

    def __init__(self, port: "ClientPort") -> None:
        self.port = port

    def add(self, entry: dict) -> None:
        if self.port.on_record is not None and self.port.server is not None:
            self.port.on_record(entry, self.port.server.endpoints)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_forever()
    finally:
        loop.close()


class _Gate:
    """One listener's permission to touch its cluster: closed with the listener, so its
    connections' pending guards give up rather than touch a cluster the sandbox dropped."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.closed = False


async def _close_servers(server: WireServer) -> None:
    for srv in server._servers:
        srv.close()
        await srv.wait_closed()
