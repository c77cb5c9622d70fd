"""The listener's pacer hands every step's writes to the OS before answers go out: the disk
gathers small appends (write-behind), and a listener killed after answering must not lose an
acknowledged record's bytes."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk
from wire.server import Pacer


def test_catch_up_leaves_nothing_gathered(tmp_path):
    cluster = Cluster(Disk(tmp_path), ClusterConfig(brokers=3), seed=0)
    cluster.create_topic("t", 1, 3, {}, assignment=[[0, 1, 2]])
    cluster.advance(1000)
    now = [cluster.scheduler.now_ms()]
    pacer = Pacer(cluster, clock=lambda: now[0])
    cluster.produce("t", 0, [b"v"], acks=1)
    for _ in range(5):                     # the followers fetch and append it within these steps
        now[0] += 1
        pacer.catch_up()
        assert cluster.disk._pending == {}
    for b in range(3):
        seg = tmp_path / f"broker-{b}" / "t-0" / "00000000000000000000.log"
        assert b"v" in seg.read_bytes(), b
