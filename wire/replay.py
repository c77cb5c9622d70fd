"""Replaying what real clients did: the request record of a listener, fed back into a
fresh cluster without sockets or a wall clock.

The listener's engine sees nothing but (a) the cluster it was built with (brokers, seed,
start time, latency), (b) topics created by the operator, (c) connections opening and
closing and (d) decoded requests, each at a virtual time; the scheduler is deterministic
and the handlers read only engine state. So running the scheduler up to each recorded
time and applying the entry there rebuilds the same engine, event for event: the event
stream's digest at any virtual time matches the live one (tests/wire/test_replay.py).
Responses are rebuilt too (``Replay.responses``), in the order they were delivered.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .protocol import parse_request
from .server import WireServer, apply_operation, frame_bytes
from .session import Session

__all__ = ["Replay", "Replayer", "replay", "settings_of"]


@dataclass
class Replay:
    server: WireServer
    responses: list[tuple[int, int, int, dict | None]] = field(default_factory=list)  # (t, node, correlation, body)

    @property
    def cluster(self):
        return self.server.cluster

    def run_until(self, time_ms: int) -> None:
        self.cluster.scheduler.run_until(time_ms)
        self.cluster.disk.flush()       # as the live listener's step: its writes reach the OS


class Replayer:
    """A record applied entry by entry (``apply``), so a caller may stop between entries
    (a lesson steps through a recorded client session mark by mark)."""

    def __init__(self, settings: dict, data_dir: str | Path, **overrides) -> None:
        settings = {**settings, **overrides}
        start_ms = settings.pop("start_ms")
        self.server = WireServer(data_dir, start_ms=start_ms, clock=lambda: start_ms, **settings)
        self.out = Replay(self.server)
        self.sessions: dict[int, Session] = {}

    def apply(self, e: dict) -> None:
        server, sched = self.server, self.server.cluster.scheduler
        sched.run_until(e["t"])
        kind = e["kind"]
        if kind == "listen":
            server.endpoints = {int(b): (h, p) for b, (h, p) in e["endpoints"].items()}
        elif kind == "create_topic":
            if e.get("via_request"):
                return          # made again by the CreateTopics request it came from
            server.cluster.create_topic(e["topic"], e["partitions"], e["replication_factor"], e.get("config") or None,
                                        e.get("assignment"))
        elif kind == "connect":
            self.sessions[e["node"]] = Session(server, e["broker"], e["node"])
        elif kind == "disconnect":
            self.sessions.pop(e["node"]).close()
        elif kind == "command":
            apply_operation(server.cluster, dict(e["cmd"]))
        elif kind == "request":
            session = self.sessions[e["node"]]
            req = parse_request(frame_bytes(e))

            def reply(body, node=e["node"], corr=req.correlation_id):
                self.out.responses.append((sched.now_ms(), node, corr, body))
            session.dispatch(req, reply)
        # "auto_create" follows from the Metadata request it came from; "unsupported" never
        # reached the engine; "mark" names a point of the record.
        server.cluster.disk.flush()     # as the live listener's step: its writes reach the OS


def settings_of(entries: Iterable[dict]) -> dict:
    """The live listener's settings (its "listen" entry)."""
    return dict(next((e.get("settings", {}) for e in entries if e["kind"] == "listen"), {}))


def replay(entries: Iterable[dict], data_dir: str | Path, **overrides) -> Replay:
    """Apply ``entries`` (a listener's ``recorder.entries`` or its requests.jsonl rows) to a
    new cluster built with the live listener's settings (its "listen" entry; ``overrides``
    win); returns it stopped at the last entry's time (``run_until`` to go further)."""
    entries = list(entries)
    rep = Replayer(settings_of(entries), data_dir, **overrides)
    for e in entries:
        rep.apply(e)
    return rep.out


def main(argv: list[str] | None = None) -> int:
    """``python -m wire.replay REQUESTS.jsonl --data-dir DIR``: replay a listener's record and
    print the event-stream digest at the last entry's time."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m wire.replay", description=main.__doc__)
    ap.add_argument("record", type=Path)
    ap.add_argument("--data-dir", type=Path, required=True)
    args = ap.parse_args(argv)
    entries = [json.loads(line) for line in args.record.read_text().splitlines() if line.strip()]
    out = replay(entries, args.data_dir)
    requests = sum(1 for e in entries if e["kind"] == "request")
    print(f"{requests} requests replayed to {out.cluster.now_ms()} ms; events {out.cluster.events.seq}, "
          f"digest {out.cluster.events.digest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
