"""A run's client traffic: what real clients did to a served cluster, kept with the run so
that Back, an export, a share link and an import replay it.

A cluster served by a listener (the web sandbox's "Connect your own client") changes
between the run's own commands: connections open and close, requests arrive, and the clock
follows the wall clock while a client is attached. :class:`Traffic` keeps each of those as
an entry, in order, stamped with

* ``at``: the run's position (commands applied) when it happened, and
* ``t``: its virtual time,

plus, before a command the learner applies while a client is attached, a ``clock`` entry
(the clock the command ran at: the wall clock moved it since the last request).

**The invariant.** A run at position ``p`` holds every entry whose ``at`` is at most ``p``,
applied in order (the scheduler run up to each entry's ``t``, then the entry applied, as
:class:`wire.replay.Replayer` does). The engine is deterministic and nothing else enters
it, so the cluster -- event stream and digest, files, every replica's records -- is the one
the clients made. The run calls three hooks (``Run.outside``, ``engine/cluster/run.py``):

* ``before(run)``, as a command starts: a live listener's client moved the clock; record it;
* ``after(run)``, as the run reaches a position (a command done, a checkpoint restored):
  apply the entries up to it;
* ``forget(run)``, when a new command replaces the run's future: the entries not yet
  applied belonged to that future.

A checkpoint is only valid with no entry applied (a client connection's node and its
messages in flight are not part of a checkpoint), so a run whose cluster has traffic takes
none (``taken``), and a restored one starts again from the first entry.

Export (:meth:`export`) is compact text: the entries as JSON lines, zlib, base64; an import
(:meth:`load`) checks every field and the sizes before anything is replayed, and a frame
that does not decode refuses the import with one line.
"""
from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any, Callable

from engine.cluster.network import Link

from .protocol import MAX_FRAME_BYTES, ProtocolError, Unsupported, parse_request
from .server import frame_bytes, json_row
from .session import FIRST_NODE_ID, Session

__all__ = ["Traffic", "TrafficError", "mirror_client_links", "CLIENT", "MAX_ENTRIES", "MAX_TEXT_BYTES"]

CLIENT = -1                       # the engine's client node: the page's fault buttons act on it
# What a run keeps. Not a request's "create_topic" or "auto_create": a handler records those
# at the broker, mid-command perhaps, and the replayed request makes them again.
KINDS = ("connect", "disconnect", "request", "unsupported", "clock")
MAX_ENTRIES = 50_000              # of an imported run
MAX_TEXT_BYTES = 16 * 1024 * 1024  # of an imported run's traffic, decompressed
FORMAT = 1


class TrafficError(ValueError):
    """An imported run's traffic is not one this listener could have recorded."""


def mirror_client_links(cluster: Any, nodes: list[int]) -> None:
    """Every link between the client node (-1) and a broker, copied onto the same link of
    each connection's node in ``nodes`` (a fault button acts on every client at once)."""
    net = cluster.network
    for node in nodes:
        for b in cluster.brokers:
            for (src, dst), (s2, d2) in (((CLIENT, b), (node, b)), ((b, CLIENT), (b, node))):
                link = net.links.get((src, dst))
                if link is None or not (link.cut or link.delay_ms or link.drop_probability):
                    net.links.pop((s2, d2), None)
                else:
                    net.links[(s2, d2)] = Link(cut=link.cut, delay_ms=link.delay_ms,
                                               drop_probability=link.drop_probability)


class Traffic:
    """The client traffic of one run. ``make_server(cluster, endpoints)`` builds a socketless
    :class:`~wire.server.WireServer` serving ``cluster`` with the live listener's settings
    (the replay answers through it); ``live()`` says whether a client is attached now."""

    def __init__(self, make_server: Callable[[Any, dict], Any], live: Callable[[], bool] = lambda: False) -> None:
        self.make_server = make_server
        self.live = live
        self.entries: list[dict] = []
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.applied = 0            # entries the current cluster holds
        self.cluster: Any = None    # the cluster they were applied to
        self.server: Any = None     # the replay's server, and its connections
        self.sessions: dict[int, Session] = {}
        self._unsubscribe: Callable[[], None] | None = None

    # ---- what the run asks ----------------------------------------------------------
    @property
    def taken(self) -> bool:
        """Whether the current cluster holds traffic (it may then take no checkpoint)."""
        return self.applied > 0

    def next_node(self) -> int:
        """The first node id no entry uses (a live listener numbers its connections from it)."""
        return max([FIRST_NODE_ID - 1] + [e["node"] for e in self.entries if "node" in e]) + 1

    def before(self, run: Any) -> None:
        self.after(run)
        now = run.world.scheduler.now_ms()
        if self.entries and self.applied == len(self.entries) and now > self.entries[-1]["t"] and self.live():
            self._append(run, {"t": now, "kind": "clock"})

    def after(self, run: Any) -> None:
        self._sync(run.world)
        entries, position = self.entries, run.position
        while self.applied < len(entries) and entries[self.applied]["at"] <= position:
            e = entries[self.applied]
            self.applied += 1
            self._apply(e)
            run.disk_changed()

    def forget(self, run: Any) -> None:
        self._sync(run.world)
        del self.entries[self.applied:]

    # ---- a live listener's entries ---------------------------------------------------
    def record(self, run: Any, entry: dict, endpoints: dict[int, tuple[str, int]] | None = None) -> None:
        """An entry of a live listener serving ``run``'s cluster, already applied by it
        (the engine did what it says as it was recorded)."""
        if entry.get("kind") not in KINDS:
            return
        self.after(run)
        self.forget(run)           # a client now, at a position Back returned to: the old future is gone
        if endpoints:
            self.endpoints = dict(endpoints)
        self._append(run, dict(entry))

    def _append(self, run: Any, entry: dict) -> None:
        entry["at"] = run.position
        self.entries.append(entry)
        self.applied = len(self.entries)
        run.disk_changed()

    # ---- replay ---------------------------------------------------------------------
    def _sync(self, cluster: Any) -> None:
        """A new cluster (a checkpoint restored, a new run): nothing of the traffic is in it."""
        if cluster is self.cluster:
            return
        self.close()
        self.cluster = cluster
        self.applied = 0

    def _replay_server(self) -> Any:
        if self.server is None:
            self.server = self.make_server(self.cluster, self.endpoints)
            self._unsubscribe = self.cluster.events.subscribe(self._on_event, kinds=("link_changed",))
        return self.server

    def _on_event(self, env: Any) -> None:
        """A fault button on the client node (-1): the open connections' links follow, as
        the live listener's do (``mirror_client_links``)."""
        ev = env.event
        if CLIENT in (ev.a, ev.b):
            mirror_client_links(self.cluster, sorted(self.sessions))

    def _apply(self, e: dict) -> None:
        self.cluster.scheduler.run_until(e["t"])
        kind = e["kind"]
        if kind == "connect":
            server = self._replay_server()
            self.sessions[e["node"]] = Session(server, e["broker"], e["node"])
            mirror_client_links(self.cluster, [e["node"]])
        elif kind == "disconnect":
            session = self.sessions.pop(e["node"], None)
            if session is not None:
                session.close()
        elif kind == "request":
            session = self.sessions.get(e["node"])
            if session is not None:
                session.dispatch(parse_request(frame_bytes(e)), _no_answer)
        # "clock": the scheduler has run to it; "unsupported" never reached the engine.

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.server = None
        self.sessions = {}

    # ---- export / import ------------------------------------------------------------
    def export(self) -> dict | None:
        """The entries as compact text (None with no traffic)."""
        if not self.entries:
            return None
        text = "\n".join(json.dumps(json_row(e), separators=(",", ":"), sort_keys=True) for e in self.entries)
        return {"format": FORMAT, "endpoints": [[b, h, p] for b, (h, p) in sorted(self.endpoints.items())],
                "entries": base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii")}

    def load(self, data: Any, positions: int, brokers: int) -> None:
        """An exported run's traffic, checked: entries in order of position and time, nodes
        of client connections, brokers of the cluster, frames that decode as requests."""
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), str):
            raise TrafficError("the clients' traffic is not in this listener's format")
        try:
            packed = base64.b64decode(data["entries"], validate=True)
            inflate = zlib.decompressobj()
            text = inflate.decompress(packed, MAX_TEXT_BYTES)
            if inflate.unconsumed_tail:
                raise TrafficError(f"the clients' traffic is over {MAX_TEXT_BYTES} bytes")
            rows = [json.loads(line) for line in text.decode().splitlines() if line.strip()]
        except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError) as exc:
            if isinstance(exc, TrafficError):
                raise
            raise TrafficError(f"the clients' traffic does not decode: {exc}") from None
        if len(rows) > MAX_ENTRIES:
            raise TrafficError(f"the clients' traffic has {len(rows)} entries, over {MAX_ENTRIES}")
        endpoints = {}
        for row in data.get("endpoints") or []:
            if not (isinstance(row, list) and len(row) == 3 and _int(row[0], 0, brokers - 1)
                    and isinstance(row[1], str) and len(row[1]) <= 255 and _int(row[2], 0, 65535)):
                raise TrafficError(f"an endpoint of the clients' traffic is not [broker, host, port]: {row!r}"[:200])
            endpoints[row[0]] = (row[1], row[2])
        entries, at, t = [], 0, None
        for i, e in enumerate(rows):
            entries.append(_checked(e, i, positions, brokers))
            if e["at"] < at or (t is not None and e["t"] < t):
                raise TrafficError(f"entry {i + 1} of the clients' traffic goes back in the run")
            at, t = e["at"], e["t"]
        self.entries, self.endpoints, self.applied = entries, endpoints, 0
        self.close()
        self.cluster = None


def _no_answer(body: Any) -> None:
    """A replayed request's answer: the client it went to is the recorded one."""


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _checked(e: Any, i: int, positions: int, brokers: int) -> dict:
    where = f"entry {i + 1} of the clients' traffic"
    if not isinstance(e, dict) or e.get("kind") not in KINDS:
        raise TrafficError(f"{where} is not a connection, request or clock entry")
    if not _int(e.get("at"), 0, positions) or not _int(e.get("t"), 0, 2**62):
        raise TrafficError(f"{where} has no run position within 0..{positions} or no time")
    kind = e["kind"]
    if kind in ("connect", "disconnect", "request") and not _int(e.get("node"), FIRST_NODE_ID, 2**31 - 1):
        raise TrafficError(f"{where} names no client connection")
    if kind == "connect" and not _int(e.get("broker"), 0, brokers - 1):
        raise TrafficError(f"{where} connects to no broker of this cluster")
    if kind == "request":
        frame = e.get("frame")
        if not isinstance(frame, str) or len(frame) > MAX_FRAME_BYTES * 4 // 3 + 4:
            raise TrafficError(f"{where} has no request frame")
        try:
            e = {**e, "frame": base64.b64decode(frame, validate=True)}
            parse_request(e["frame"])
        except (binascii.Error, ValueError, ProtocolError, Unsupported) as exc:
            raise TrafficError(f"{where} is not a request this listener serves: {exc}"[:300]) from None
    return e
