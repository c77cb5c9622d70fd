"""A real client's session, scripted and recorded: what lesson 16 shows.

:func:`record` starts a listener (``wire.threaded.Listener``) on loopback, runs a real
client library (confluent-kafka, librdkafka) against it phase by phase, and between the
phases acts as the operator (a broker crash, a cut link: ``WireServer.operate``, recorded
like the requests). After each phase it records a *mark*. The result is the listener's
request record: every connection, request and operator command with its virtual time,
plus the marks. A lesson replays it (``wire.replay.Replayer``) up to a mark per step, so
Step, Back and a reload rebuild exactly what the client did without running it again.

The phases (each ends at the mark of the same name):

* ``bootstrap`` -- a producer given one broker's address connects there, negotiates
  versions (ApiVersions) and asks for Metadata: it learns every broker's advertised
  address and each partition's leader.
* ``produce`` -- records wait in the client's accumulator (``linger.ms``) and leave as
  one Produce batch per leader, each on a direct connection to that leader (after
  InitProducerId: the producer is idempotent).
* ``leader-kill`` -- the leader of ``orders-0`` crashes while the producer sends to it; the
  controller moves leadership after the broker's session times out; the client's
  metadata refresh finds the new leader and the batch is sent again there, once.
* ``leader-move`` -- the crashed broker is back in the ISR and the preferred leader takes
  over again; the client's next Produce still goes to the broker that led a moment ago,
  which answers NOT_LEADER_OR_FOLLOWER; the client refreshes Metadata and sends it again.
* ``lost-response`` -- the answer to a Produce is lost (the link from the leader to that
  connection is cut one way); the client times out, reconnects and retries, and the leader
  answers the retry with the offsets it gave the first try (a duplicate sequence).
* ``group`` -- two consumers join group ``g``; ``leave`` -- one closes and sends LeaveGroup;
  ``session-timeout`` -- a member killed without a word (kcat, SIGKILL) is removed after
  ``session.timeout.ms``; ``max-poll`` -- a member that stops polling leaves the group
  after ``max.poll.interval.ms``.

``python -m wire.script --out session.json`` records one (about a minute of wall time).
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from .server import json_row
from .threaded import Listener

__all__ = ["record", "TOPIC", "GROUP", "PHASES", "SETTINGS"]

TOPIC, GROUP = "orders", "g"
PHASES = ("bootstrap", "produce", "leader-kill", "leader-move", "lost-response", "group", "leave", "session-timeout", "max-poll")
SESSION_TIMEOUT_MS = 6000          # the smallest librdkafka and the group coordinator both accept
MAX_POLL_INTERVAL_MS = 7000        # librdkafka wants it >= session.timeout.ms
SETTINGS = {"brokers": 3, "seed": 16, "network_latency_ms": 1,
            "cluster_config": {"broker_heartbeat_interval_ms": 100, "broker_session_timeout_ms": 600}}


def _wait(pred: Callable[[], bool], timeout: float, poll: Callable[[], Any] | None = None) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        if poll is not None:
            poll()
        else:
            time.sleep(0.05)
    return pred()


def record(data_dir: str | Path, log: Callable[[str], None] | None = None) -> dict:
    """Run the scripted session; returns ``{"entries": [...], "marks": {name: t}}``."""
    from confluent_kafka import Consumer, Producer
    say = log or (lambda _msg: None)
    data_dir = Path(data_dir)
    lst = Listener(data_dir, brokers=SETTINGS["brokers"], seed=SETTINGS["seed"],
                   network_latency_ms=SETTINGS["network_latency_ms"], cluster_config=SETTINGS["cluster_config"],
                   trace=True).start()
    marks: dict[str, int] = {}
    victim = None
    consumers: list = []
    try:
        lst.call(lambda s: s.operate({"cmd": "configure_groups", "offsets_topic_num_partitions": 3,
                                      "group_initial_rebalance_delay_ms": 0}))
        lst.call(lambda s: s.create_topic(TOPIC, 2, 3))
        time.sleep(0.3)
        first = "%s:%d" % lst.server.endpoints[0]
        leader = lambda p: lst.call(lambda s: s.cluster.controller.topics[TOPIC].partitions[p].leader)  # noqa: E731
        lst.call(lambda s: s.mark("start"))

        # ---- bootstrap: one address; ApiVersions, Metadata ---------------------------------
        acked: list[tuple[int, int, bytes]] = []
        failed: list[str] = []

        def report(err, msg):
            if err:
                failed.append(str(err))
            else:
                acked.append((msg.partition(), msg.offset(), msg.value()))
        p = Producer({"bootstrap.servers": first, "enable.idempotence": True, "acks": "all", "linger.ms": 100,
                      "retry.backoff.ms": 100, "request.timeout.ms": 1500, "socket.timeout.ms": 1500,
                      "message.timeout.ms": 60000,
                      "topic.metadata.refresh.interval.ms": 60000, "client.id": "lesson-16"})
        p.list_topics(TOPIC, timeout=10)
        time.sleep(0.3)
        marks["bootstrap"] = lst.call(lambda s: s.mark("bootstrap"))
        say("bootstrap done")

        # ---- produce: the accumulator's batches, one per leader ---------------------------
        for i in range(6):
            p.produce(TOPIC, f"order-{i}".encode(), key=f"k{i}".encode(), partition=i % 2, on_delivery=report)
        p.flush(20)
        time.sleep(0.2)
        marks["produce"] = lst.call(lambda s: s.mark("produce"))
        say(f"produce done: {acked}")

        # ---- leader-kill: the leader of orders-0 crashes mid-send ----------------------------
        old = leader(0)
        for i in range(6, 9):
            p.produce(TOPIC, f"order-{i}".encode(), key=f"k{i}".encode(), partition=0, on_delivery=report)
        p.poll(0)
        time.sleep(0.02)
        lst.call(lambda s: s.operate({"cmd": "crash", "broker": old}))
        p.flush(30)
        time.sleep(0.2)
        marks["leader-kill"] = lst.call(lambda s: s.mark("leader-kill"))
        say(f"leader-kill done: old {old} new {leader(0)}")
        lst.call(lambda s: s.operate({"cmd": "restart", "broker": old}))     # back as a follower

        # ---- leader-move: the preferred leader takes over; the client's next send goes to the
        # broker that led a moment ago, which answers NOT_LEADER_OR_FOLLOWER
        isr = lambda: lst.call(lambda s: list(s.cluster.controller.topics[TOPIC].partitions[0].isr))  # noqa: E731
        _wait(lambda: old in isr(), 20)
        lst.call(lambda s: s.operate({"cmd": "elect_preferred_leaders"}))
        p.produce(TOPIC, b"order-9", key=b"k9", partition=0, on_delivery=report)
        _wait(lambda: len(acked) == 10 or bool(failed), 30, lambda: p.poll(0.05))
        time.sleep(0.2)
        marks["leader-move"] = lst.call(lambda s: s.mark("leader-move"))
        say(f"leader-move done: leader {leader(0)}; {acked[-1:]}")

        # ---- lost-response: the answer to a Produce never arrives ---------------------------
        new = leader(0)
        nodes = lst.call(lambda s: sorted(n for n, (sess, _) in s._sessions.items() if sess.broker_id == new))
        for n in nodes:
            lst.call(lambda s, n=n: s.operate({"cmd": "cut_link", "a": new, "b": n, "both": False}))
        p.produce(TOPIC, b"order-10", key=b"k10", partition=0, on_delivery=report)
        _wait(lambda: len(acked) == 11 or bool(failed), 30, lambda: p.poll(0.05))
        for n in nodes:
            lst.call(lambda s, n=n: s.operate({"cmd": "heal_link", "a": new, "b": n, "both": False}))
        time.sleep(0.2)
        marks["lost-response"] = lst.call(lambda s: s.mark("lost-response"))
        say(f"lost-response done: {acked[-1:]}, failed {failed}")
        p.flush(5)
        del p

        # ---- group: two members, then LeaveGroup, session timeout, max.poll.interval ----------
        base = {"bootstrap.servers": first, "group.id": GROUP, "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 1000, "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                "auto.offset.reset": "earliest", "enable.auto.commit": False}

        def member(name: str):
            c = Consumer({**base, "client.id": name})
            c.subscribe([TOPIC])
            consumers.append(c)
            return c

        def assigned(c) -> int:
            return len(c.assignment())

        def poll_all(cs):
            return lambda: [c.poll(0.05) for c in cs]
        a, b = member("member-a"), member("member-b")
        _wait(lambda: assigned(a) == 1 and assigned(b) == 1, 40, poll_all([a, b]))
        time.sleep(0.2)
        marks["group"] = lst.call(lambda s: s.mark("group"))
        say(f"group: a {assigned(a)} b {assigned(b)}")

        b.close()
        consumers.remove(b)
        _wait(lambda: assigned(a) == 2, 30, poll_all([a]))
        marks["leave"] = lst.call(lambda s: s.mark("leave"))
        say(f"leave: a {assigned(a)}")

        if shutil.which("kcat") is not None:
            victim = subprocess.Popen(["kcat", "-b", first, "-G", GROUP, "-X", f"session.timeout.ms={SESSION_TIMEOUT_MS}",
                                       "-X", "client.id=member-k", "-q", "-f", "%s\n", TOPIC],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait(lambda: assigned(a) == 1, 40, poll_all([a]))
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            _wait(lambda: assigned(a) == 2, 40, poll_all([a]))
        marks["session-timeout"] = lst.call(lambda s: s.mark("session-timeout"))
        say(f"session-timeout: a {assigned(a)}")

        c = member("member-c")
        _wait(lambda: assigned(a) == 1 and assigned(c) == 1, 40, poll_all([a, c]))
        # c stops polling: after max.poll.interval.ms librdkafka leaves the group itself
        _wait(lambda: assigned(a) == 2, MAX_POLL_INTERVAL_MS / 1000 + 20, poll_all([a]))
        marks["max-poll"] = lst.call(lambda s: s.mark("max-poll"))
        say(f"max-poll: a {assigned(a)}")
        for c in consumers:
            c.close()
        consumers.clear()
        entries = lst.call(lambda s: [json_row(e) for e in s.recorder.entries])
    finally:
        if victim is not None and victim.poll() is None:
            victim.kill()
        for c in consumers:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - already closed
                pass
        lst.stop()
    return {"format": "kafkaviz-client-session", "version": 1, "phases": list(PHASES), "marks": marks,
            "entries": entries}


def main(argv: list[str] | None = None) -> int:
    """``python -m wire.script --out FILE``: record the scripted client session as JSON."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m wire.script", description=main.__doc__)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rec = record(tmp, log=print)
    args.out.write_text(json.dumps(rec, separators=(",", ":")))
    print(f"{len(rec['entries'])} entries, marks {rec['marks']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
