"""Consumer groups of real clients on the engine's group coordinator: each client subscribes,
reads everything, commits, and the coordinator holds the commits (read back from its offsets
cache); a group of two rebalances when one member is killed and its session times out."""
from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time

import pytest

from engine.cluster.consumer import group_service
from test_wire_clients import PARTITIONS

TOTAL = 24


def _produce(boot: str, topic: str) -> dict:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": boot})
    for i in range(TOTAL):
        p.produce(topic, f"v{i}".encode(), f"k{i}".encode(), partition=i % PARTITIONS)
    assert p.flush(20) == 0
    return {(topic, q): TOTAL // PARTITIONS for q in range(PARTITIONS)}


def confluent_group(boot, topic, group):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, end = 0, time.time() + 30
    while got < TOTAL and time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.close()
    return got


def kafka_python_group(boot, topic, group):
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=boot, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    got, end = 0, time.time() + 30
    while got < TOTAL and time.time() < end:
        got += sum(len(ms) for ms in c.poll(200).values())
    c.commit()
    c.close()
    return got


def aiokafka_group(boot, topic, group):
    from aiokafka import AIOKafkaConsumer

    async def run():
        c = AIOKafkaConsumer(topic, bootstrap_servers=boot, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        got, end = 0, time.time() + 30
        try:
            while got < TOTAL and time.time() < end:
                got += sum(len(ms) for ms in (await c.getmany(timeout_ms=200)).values())
            await c.commit()
        finally:
            await c.stop()
        return got
    return asyncio.run(run())


def kcat_group(boot, topic, group):
    # kcat -G commits automatically (enable.auto.commit) and on exit after -e
    out = subprocess.run(["kcat", "-b", boot, "-G", group, "-o", "beginning", "-e", "-q", "-f", "%s\n", topic],
                         capture_output=True, timeout=60, check=True).stdout
    return len(out.splitlines())


GROUP_CLIENTS = {"confluent-kafka": confluent_group, "kafka-python": kafka_python_group,
                 "aiokafka": aiokafka_group, "kcat": kcat_group}


@pytest.mark.parametrize("client", list(GROUP_CLIENTS))
def test_a_group_consumer_reads_everything_and_its_commits_reach_the_coordinator(listener, client):
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (make system-deps)")
    topic, group = f"group-{client}", f"readers-{client}"
    listener.call(lambda s: s.create_topic(topic, PARTITIONS, 3))
    time.sleep(0.3)
    expected = _produce(listener.bootstrap, topic)
    assert GROUP_CLIENTS[client](listener.bootstrap, topic, group) == TOTAL
    assert listener.call(lambda s: group_service(s.cluster).committed(group)) == expected
    # the engine's views of its group service still work with real clients among its members
    from engine.cluster.consumer import ownership_findings
    state = listener.call(lambda s: group_service(s.cluster).state())
    assert group in state["groups"]
    assert listener.call(lambda s: ownership_findings(group_service(s.cluster))) == []


def test_a_killed_member_times_out_and_the_group_rebalances_to_the_survivor(listener):
    """kcat (-G) and confluent-kafka share a group; kcat is killed with SIGKILL, so it never
    sends LeaveGroup: after session.timeout.ms the coordinator removes it and the survivor
    is assigned every partition."""
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (make system-deps)")
    from confluent_kafka import Consumer
    topic, group = "group-rebalance", "pair"
    listener.call(lambda s: s.create_topic(topic, PARTITIONS, 3))
    time.sleep(0.3)
    _produce(listener.bootstrap, topic)
    victim = subprocess.Popen(["kcat", "-b", listener.bootstrap, "-G", group, "-X", "session.timeout.ms=6000",
                               "-q", "-f", "%s\n", topic], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    survivor = Consumer({"bootstrap.servers": listener.bootstrap, "group.id": group, "session.timeout.ms": 6000,
                         "auto.offset.reset": "earliest"})
    try:
        survivor.subscribe([topic])

        def members(s):
            svc = group_service(s.cluster)
            found = svc.find_coordinator(group)
            coord = svc.coordinator(*found) if found else None
            g = coord.groups.get(group) if coord is not None else None
            return (g.state, len(g.members)) if g is not None else (None, 0)
        end = time.time() + 30
        # Stable at the coordinator comes a SyncGroup answer before the survivor has its assignment
        while (listener.call(members) != ("Stable", 2) or not survivor.assignment()) and time.time() < end:
            survivor.poll(0.2)
        assert listener.call(members) == ("Stable", 2)
        assert 0 < len(survivor.assignment()) < PARTITIONS
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        end = time.time() + 30
        while len(survivor.assignment()) < PARTITIONS and time.time() < end:
            survivor.poll(0.2)
        assert sorted(tp.partition for tp in survivor.assignment()) == list(range(PARTITIONS))
        assert listener.call(members) == ("Stable", 1)
    finally:
        survivor.close()
        if victim.poll() is None:
            victim.kill()
