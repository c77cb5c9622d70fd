"""A real client's traffic is part of the sandbox's run (wire/traffic.py): kafka-python
produces into and consumes from the sandbox's listener, the learner acts between (a
command while a client is attached, a fault on the client node), and the run's export
carries every request. Imported into a fresh sandbox (from the file, or from a share link),
the run replays what the clients did: the same event digest and run state digest, the same
records in every replica, the client's requests as the new run's events; Back and Step on
the imported run come to the same state again. Tampered traffic is refused in one line."""
from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from django.conf import settings as django_settings

from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .framing import StateTracker

pytest.importorskip("kafka")


def make_runtime(tmp_path, name):
    sent: list[dict] = []
    tracker = StateTracker()

    async def publish(group, message):
        sent.append(tracker.message(message))

    conf = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
            "COMMAND_BURST": 1000, "COMMANDS_PER_SECOND": 1000.0, "IDLE_SECONDS": 0}
    return Runtime(tmp_path / name, settings=conf, publish=publish), sent


@pytest.fixture
def listening(settings):
    settings.KAFKAVIZ_CLIENT_LISTENER = {**settings.KAFKAVIZ_CLIENT_LISTENER, "ENABLED": True, "PORTS": ""}


async def wait_for(pred, timeout=15.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if pred():
            return True
        await asyncio.sleep(0.05)
    return pred()


def produce_and_consume(boot: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=boot)
    admin.create_topics([NewTopic("made-by-client", 2, 3)])     # a topic a request makes
    admin.close()
    p = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5, enable_idempotence=True)
    futures = [p.send("t", key=b"k%d" % i, value=b"from-kafka-python-%d" % i, partition=0) for i in range(6)]
    p.flush(20)
    for f in futures:
        f.get(10)
    p.close(5)
    c = KafkaConsumer(bootstrap_servers=boot, group_id="g-export", auto_offset_reset="earliest",
                      enable_auto_commit=False, fetch_max_wait_ms=100)
    c.assign([TopicPartition("t", 0)])
    got, end = [], time.time() + 20
    while len([v for v in got if v.startswith(b"from-kafka-python")]) < 6 and time.time() < end:
        for msgs in c.poll(200).values():
            got.extend(m.value for m in msgs)
    c.commit()
    c.close()
    return got


def replicas(engine) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    cluster = engine.run.cluster
    out = {}
    for b, broker in sorted(cluster.brokers.items()):
        part = broker.partitions.get(("t", 0))
        if part is not None:
            log = part.log
            out[b] = [(r.offset, r.key, r.value) for batch in log.batches(log.log_start_offset, log.log_end_offset)
                      for r in batch.records]
    return out


def fingerprint(sb) -> dict:
    with sb.lock:
        run = sb.engine.run
        return {"digest": run.events.digest(), "seq": run.events.seq, "clock": run.cluster.now_ms(),
                "state": run.state_digest(),     # the whole run: cluster state, every file, checker, results
                "position": run.position, "replicas": replicas(sb.engine),
                "topics": sorted(run.cluster.controller.topics),
                "offsets": {k: v for k, v in run.cluster.state().items() if k == "groups"}}


def events_of(sent, kind):
    return [e for f in sent if f.get("type") == "frame" for e in f.get("events", []) if e["kind"] == kind]


@pytest.mark.asyncio
async def test_an_export_carries_the_clients_requests_and_an_import_replays_them(tmp_path, listening):
    rt, _sent = make_runtime(tmp_path, "a")
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2})
    await rt.command(sid, {"cmd": "client_port", "on": True})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    boot = port.server.bootstrap

    got = await asyncio.to_thread(produce_and_consume, boot)
    assert [v for v in got if v.startswith(b"from-kafka-python")] == [b"from-kafka-python-%d" % i for i in range(6)]
    assert await wait_for(lambda: port.attached == 0)
    # While a client is attached (a raw socket), the learner acts: the clock the command runs
    # at (the wall clock moved it) is recorded, and the fault on -1 reaches the connection.
    host, p = port.server.endpoints[0]
    sock = socket.create_connection((host, p))
    try:
        assert await wait_for(lambda: port.attached == 1)
        await asyncio.sleep(0.3)
        await rt.command(sid, {"cmd": "cut_link", "a": -1, "b": 0, "both": True})
        await asyncio.sleep(0.2)
        await rt.command(sid, {"cmd": "produce", "topic": "t", "partition": 0, "count": 2})
        await rt.command(sid, {"cmd": "heal_link", "a": -1, "b": 0, "both": True})
    finally:
        sock.close()
    assert await wait_for(lambda: port.attached == 0)
    with sb.lock:
        traffic = sb.engine.run.outside
        kinds = {e["kind"] for e in traffic.entries}
        assert {"connect", "request", "disconnect", "clock"} <= kinds, kinds
        requests = sum(1 for e in traffic.entries if e["kind"] == "request")
    assert requests > 10
    live = fingerprint(sb)
    assert any(v == b"from-kafka-python-5" for _, _, v in live["replicas"][0])
    assert "made-by-client" in live["topics"]

    exported = (await rt.command(sid, {"cmd": "export"}))["data"]
    assert exported["run"]["clients"]["format"] == 1
    # The run format of every kind (steps of commands, the world it plays), the traffic beside it.
    assert set(exported["run"]) == {"world", "log", "step", "clients"}
    text = json.dumps(exported)
    print(f"run with {requests} client requests: {len(text)} bytes exported")

    # A fresh runtime and sandbox: the import replays the commands and the clients' requests.
    rt2, sent2 = make_runtime(tmp_path, "b")
    sid2 = new_sandbox_id()
    await rt2.attach(sid2, "sandbox")
    await rt2.command(sid2, {"cmd": "import", "run": text})
    sb2 = rt2.sandboxes[sid2]
    assert fingerprint(sb2) == live
    # The diagrams show the client: its connection, requests and answers are the new run's
    # events (the frame after an import carries the newest of them; the run keeps the rest).
    with sb2.lock:
        counts = dict(sb2.engine.run.checker.event_counts)
        apis = {env.event.api for env in sb2.engine.run.events.envelopes if env.event.kind == "client_response"}
    assert counts.get("client_request", 0) == requests and counts.get("client_connected", 0) >= 3
    assert {"ApiVersions", "Metadata", "Fetch", "OffsetCommit"} <= apis, apis     # (its Produce left the ring)
    assert events_of(sent2, "client_disconnected")

    # Back to the step before the learner's produce and forward again: the same run.
    with sb2.lock:
        total = sb2.engine.total_steps
    await rt2.command(sid2, {"cmd": "seek", "step": 1})
    assert fingerprint(sb2)["replicas"] != live["replicas"]
    await rt2.command(sid2, {"cmd": "seek", "step": total})
    assert fingerprint(sb2) == live

    # Export of the imported run carries the same traffic.
    again = (await rt2.command(sid2, {"cmd": "export"}))["data"]
    assert again["run"]["clients"] == exported["run"]["clients"]
    # A file in the format the replication kind exported before the common one (scenario or
    # shape, a flat command log, "commands", and the clients beside) opens to the same run.
    from engine.cluster.commands import command_to_dict, parse_command
    world = exported["run"]["world"]
    flat = [command_to_dict(parse_command(c)) for e in exported["run"]["log"] for c in e["do"]]
    old = {**exported, "run": {"scenario": "custom", "truncation": world["shape"]["truncation"], "shape": world["shape"],
                               "seed": world["seed"], "log": flat, "step": exported["run"]["step"],
                               "commands": live["position"], "clients": exported["run"]["clients"]}}
    sid3 = new_sandbox_id()
    await rt2.attach(sid3, "sandbox")
    await rt2.command(sid3, {"cmd": "import", "run": json.dumps(old)})
    assert fingerprint(rt2.sandboxes[sid3]) == live
    # A listener opened on the imported run numbers its connections past the recorded ones.
    await rt2.command(sid2, {"cmd": "client_port", "on": True})
    with sb2.lock:
        recorded = max(e["node"] for e in sb2.engine.run.outside.entries if "node" in e)
        assert sb2.engine.client_port_.server._next_node > recorded
    rt.close_all()
    rt2.close_all()


@pytest.mark.asyncio
async def test_tampered_traffic_is_refused_with_one_line_and_the_sandbox_stays(tmp_path, listening):
    rt, _sent = make_runtime(tmp_path, "a")
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2})
    sb = rt.sandboxes[sid]
    data = (await rt.command(sid, {"cmd": "export"}))["data"]
    before = fingerprint(sb)
    import base64
    import zlib
    bad_frame = base64.b64encode(b"\x00\x00\x00\x00garbage").decode()
    cases = {
        "not packed": {"format": 1, "entries": "%%%"},
        "a frame that is no request": {"format": 1, "entries": base64.b64encode(zlib.compress(json.dumps(
            {"at": 0, "t": 0, "kind": "request", "node": 1000, "frame": bad_frame}).encode())).decode()},
        "back in time": {"format": 1, "entries": base64.b64encode(zlib.compress(b"\n".join(json.dumps(e).encode() for e in (
            {"at": 1, "t": 5, "kind": "connect", "node": 1000, "broker": 0},
            {"at": 0, "t": 6, "kind": "disconnect", "node": 1000})))).decode()},
        "a broker it does not have": {"format": 1, "entries": base64.b64encode(zlib.compress(json.dumps(
            {"at": 0, "t": 0, "kind": "connect", "node": 1000, "broker": 7}).encode())).decode()},
        "a bomb": {"format": 1, "entries": base64.b64encode(zlib.compress(b" " * (17 * 1024 * 1024))).decode()},
    }
    for why, clients in cases.items():
        run = {**data, "run": {**data["run"], "clients": clients}}
        with pytest.raises(CommandError) as refused:
            await rt.command(sid, {"cmd": "import", "run": json.dumps(run)})
        assert refused.value.code == "invalid", why
        assert "\n" not in str(refused.value) and "client" in str(refused.value), why
        assert fingerprint(sb) == before, why
    rt.close_all()


def produce_only(boot: str) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5)
    for i in range(4):
        p.send("t", value=b"shared-%d" % i, partition=0).get(10)
    p.close(5)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_share_link_carries_the_clients_requests(tmp_path, listening):
    rt, _sent = make_runtime(tmp_path, "a")
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 2, "min_insync_replicas": 1})
    await rt.command(sid, {"cmd": "client_port", "on": True})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    await asyncio.to_thread(produce_only, port.server.bootstrap)
    assert await wait_for(lambda: port.attached == 0)
    await rt.command(sid, {"cmd": "advance", "ms": 500})        # the learner's own step after the client
    live = fingerprint(sb)
    assert any(v == b"shared-3" for rows in live["replicas"].values() for _, _, v in rows)
    share_id = (await rt.command(sid, {"cmd": "share"}))["share_id"]

    rt2, _sent2 = make_runtime(tmp_path, "b")
    sid2 = new_sandbox_id()
    await rt2.attach(sid2, "sandbox")
    await rt2.command(sid2, {"cmd": "open_shared", "id": share_id})
    assert fingerprint(rt2.sandboxes[sid2]) == live
    rt.close_all()
    rt2.close_all()


@pytest.mark.asyncio
async def test_back_replays_the_client_and_a_client_after_back_is_recorded_there(tmp_path, listening):
    """A client writes at step P; the learner steps on and goes Back to P (the client's records
    replayed from the run's traffic, not lost as before), and a client writes again there: it
    is recorded at P after the first one, the learner's command after P stays the run's
    future, and the run exports and imports to the same state."""
    rt, _sent = make_runtime(tmp_path, "a")
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2})
    await rt.command(sid, {"cmd": "client_port", "on": True})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    await asyncio.to_thread(produce_only, port.server.bootstrap)
    assert await wait_for(lambda: port.attached == 0)
    at_p = fingerprint(sb)
    await rt.command(sid, {"cmd": "produce", "topic": "t", "partition": 0, "count": 3})
    with sb.lock:
        step = sb.engine.position
    await rt.command(sid, {"cmd": "seek", "step": step - 1})
    back = fingerprint(sb)
    assert back["replicas"] == at_p["replicas"] and back["topics"] == at_p["topics"]
    await asyncio.to_thread(produce_only, port.server.bootstrap)        # again, at P
    assert await wait_for(lambda: port.attached == 0)
    live = fingerprint(sb)
    values = [v for _, _, v in live["replicas"][0]]
    assert values.count(b"shared-0") == 2
    with sb.lock:
        assert sb.engine.run.position < len(sb.engine.run.log)      # the produce is still ahead
    exported = (await rt.command(sid, {"cmd": "export"}))["data"]
    rt2, _sent2 = make_runtime(tmp_path, "b")
    sid2 = new_sandbox_id()
    await rt2.attach(sid2, "sandbox")
    await rt2.command(sid2, {"cmd": "import", "run": json.dumps(exported)})
    assert fingerprint(rt2.sandboxes[sid2]) == live
    rt.close_all()
    rt2.close_all()
