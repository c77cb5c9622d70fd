"""The files Kafka writes around the logs: meta.properties per log directory,
partition.metadata per partition, and the per-log-dir checkpoints — byte for byte, and
used when a broker starts again."""
from __future__ import annotations

import base64
import datetime

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.log_dir import (ClusterIdentity, InconsistentTopicIdError, MetaProperties,
                                    decode_partition_metadata, ensure_partition_metadata, java_date, kafka_uuid)
from engine.disk import Disk
from engine.errors import KafkaStorageError

T = "t"


def cluster(tmp_path, brokers=1, seed=3, **log) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": brokers, **log}), seed=seed)
    c.create_topic(T, 1, brokers)
    c.advance(10)
    return c


def test_meta_properties_per_log_dir_byte_for_byte(tmp_path):
    c = cluster(tmp_path, brokers=3)
    ident = c.identity
    for b in range(3):
        expected = (f"#\n#Thu Jan 01 00:00:00 UTC 1970\nnode.id={b}\ndirectory.id={ident.directory_ids[b]}\n"
                    f"version=1\ncluster.id={ident.cluster_id}\n").encode()
        assert c.disk.read_all(f"broker-{b}/meta.properties") == expected
        meta = MetaProperties.decode(expected)
        assert (meta.node_id, meta.cluster_id, meta.version) == (b, ident.cluster_id, 1)
    assert len({ident.cluster_id, *ident.directory_ids.values()}) == 4


def test_ids_are_kafka_uuids_from_the_seed(tmp_path):
    a, b, other = ClusterIdentity(3), ClusterIdentity(3), ClusterIdentity(4)
    assert a.cluster_id == b.cluster_id != other.cluster_id
    assert a.topic_id("x") == b.topic_id("x") != a.topic_id("y")
    import random
    rng = random.Random(0)
    for _ in range(200):
        text = kafka_uuid(rng)
        raw = base64.urlsafe_b64decode(text + "==")
        assert len(text) == 22 and len(raw) == 16 and not text.startswith("-")
        assert raw[6] >> 4 == 4 and raw[8] >> 6 == 0b10           # version 4, IETF variant


@pytest.mark.parametrize("ms", [0, 1_000, 951_782_400_000, 1_700_000_000_000, 4_102_444_799_000, 86_399_999])
def test_java_date_matches_the_calendar(ms):
    expected = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    assert java_date(ms) == expected


def test_meta_properties_survive_a_restart_and_are_checked(tmp_path):
    c = cluster(tmp_path)
    before = c.disk.read_all("broker-0/meta.properties")
    c.crash(0)
    c.advance(5000)
    c.restart(0)
    assert c.disk.read_all("broker-0/meta.properties") == before     # written once, at format time
    c.identity.cluster_id = "AAAAAAAAQACAAAAAAAAAAA"                # another cluster's directory
    c.crash(0)
    with pytest.raises(KafkaStorageError, match="cluster.id"):
        c.restart(0)


def test_partition_metadata_holds_the_topic_id_on_every_replica(tmp_path):
    c = cluster(tmp_path, brokers=3)
    c.create_topic("u", 1, 3)
    c.advance(100)
    tid = c.identity.topic_ids[T]
    for b in range(3):
        data = c.disk.read_all(f"broker-{b}/t-0/partition.metadata")
        assert data == b"version: 0\ntopic_id: " + tid.encode()
        assert decode_partition_metadata(data) == tid
    assert c.disk.read_all("broker-0/u-0/partition.metadata") != c.disk.read_all("broker-0/t-0/partition.metadata")


def test_partition_metadata_of_another_topic_is_refused(tmp_path):
    c = cluster(tmp_path)
    c.disk.write_atomic("broker-0/t-0/partition.metadata", b"version: 0\ntopic_id: AAAAAAAAQACAAAAAAAAAAA")
    with pytest.raises(InconsistentTopicIdError):
        ensure_partition_metadata(c.disk, "broker-0/t-0", c, T)


def test_checkpoints_in_kafka_text_format(tmp_path):
    c = cluster(tmp_path, **{"flush.messages": 1})
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b", "c", "d"], acks=1))
    log = c.brokers[0].partitions[(T, 0)].log
    log.delete_records(2)
    c.advance(60_000)
    d = c.disk
    assert d.read_all("broker-0/recovery-point-offset-checkpoint") == b"0\n1\nt 0 4\n"
    assert d.read_all("broker-0/replication-offset-checkpoint") == b"0\n1\nt 0 4\n"
    assert d.read_all("broker-0/log-start-offset-checkpoint") == b"0\n1\nt 0 2\n"


def test_restart_restores_the_log_start_offset_from_its_checkpoint(tmp_path):
    c = cluster(tmp_path, **{"flush.messages": 1})
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b", "c", "d"], acks=1))
    c.brokers[0].partitions[(T, 0)].log.delete_records(3)
    c.advance(60_000)
    c.crash(0)
    c.restart(0)
    log = c.brokers[0].partitions[(T, 0)].log
    assert log.log_start_offset == 3 and [r.value for r in log.records()] == [b"d"]


def test_restart_recovers_only_segments_from_the_recovery_point(tmp_path):
    c = cluster(tmp_path, **{"flush.messages": 1, "segment.bytes": 300})
    for i in range(12):
        c.run_until_idle_produce(c.produce(T, 0, ["value-%02d" % i], acks=1))
    c.advance(60_000)                                   # recovery-point checkpoint at LEO 12
    for i in range(12, 20):
        c.run_until_idle_produce(c.produce(T, 0, ["value-%02d" % i], acks=1))
    log = c.brokers[0].partitions[(T, 0)].log
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    c.crash(0)
    seq = c.events.seq
    c.restart(0)
    started = [e for e in c.events.envelopes if e.seq > seq and e.event.kind == "recovery_started"][0].event
    assert started.recovery_point == 12
    rebuilt = {e.event.segment for e in c.events.envelopes if e.seq > seq and e.event.kind == "index_rebuilt"}
    nexts = dict(zip(bases, bases[1:] + [None]))
    assert rebuilt == {b for b in bases if nexts[b] is None or nexts[b] > 12}
    assert rebuilt != set(bases)                          # the segments below it were trusted
    assert [v for _, v, _ in c.log_values(0, T, 0)] == [b"value-%02d" % i for i in range(20)]


def test_a_clean_shutdown_marker_skips_recovery_and_a_crash_does_not(tmp_path):
    c = cluster(tmp_path, **{"segment.bytes": 300})
    for i in range(10):
        c.run_until_idle_produce(c.produce(T, 0, ["value-%02d" % i], acks=1))
    c.shutdown(0)
    seq = c.events.seq
    c.restart(0)
    kinds = [e.event.kind for e in c.events.envelopes if e.seq > seq]
    assert "broker_started" in kinds and "recovery_finished" in kinds and "index_rebuilt" not in kinds
    c.advance(100)
    c.crash(0)
    seq = c.events.seq
    c.restart(0)
    assert any(e.event.kind == "index_rebuilt" for e in c.events.envelopes if e.seq > seq)
    assert [v for _, v, _ in c.log_values(0, T, 0)] == [b"value-%02d" % i for i in range(10)]


def test_a_partition_directory_of_another_topic_id_stops_the_start_before_anything_changes(tmp_path):
    c = cluster(tmp_path)
    c.crash(0)
    c.disk.write_atomic("broker-0/t-0/partition.metadata", b"version: 0\ntopic_id: AAAAAAAAQACAAAAAAAAAAA")
    incarnation, seq = c.brokers[0].incarnation, c.events.seq
    with pytest.raises(InconsistentTopicIdError):
        c.restart(0)
    broker = c.brokers[0]
    assert not broker.alive and broker.incarnation == incarnation and not broker.partitions
    assert not [e for e in c.events.envelopes if e.seq > seq and e.event.kind == "broker_started"]
