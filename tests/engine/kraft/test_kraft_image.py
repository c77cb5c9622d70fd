"""The metadata image a snapshot holds: metadata records folded into current state, written back
out as one record per thing that exists (Kafka's MetadataImage)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kraft import metadata as md
from engine.kraft.config import QuorumConfig
from engine.kraft.image import MetadataImage, compact

TIDS = ["5pTiLd2lTuyzRbL7F0Rw4A", "AAECAwQFBgcICQoLDA0ODw"]
IDS = st.integers(1, 3)
LISTS = st.lists(IDS, max_size=3)


def _records():
    tid = st.sampled_from(TIDS)
    return st.one_of(
        st.builds(md.FeatureLevelRecord, name=st.sampled_from(["metadata.version", "kraft.version"]),
                  feature_level=st.integers(0, 3)),
        st.builds(md.RegisterBrokerRecord, broker_id=IDS, broker_epoch=st.integers(0, 9), fenced=st.booleans()),
        st.builds(md.UnregisterBrokerRecord, broker_id=IDS, broker_epoch=st.integers(0, 9)),
        st.builds(md.FenceBrokerRecord, id=IDS, epoch=st.integers(0, 9)),
        st.builds(md.UnfenceBrokerRecord, id=IDS, epoch=st.integers(0, 9)),
        st.builds(md.BrokerRegistrationChangeRecord, broker_id=IDS, fenced=st.sampled_from([-1, 0, 1]),
                  in_controlled_shutdown=st.sampled_from([0, 1])),
        st.builds(md.TopicRecord, name=st.sampled_from(["a", "b"]), topic_id=tid),
        st.builds(md.PartitionRecord, partition_id=st.integers(0, 1), topic_id=tid, replicas=LISTS, isr=LISTS,
                  leader=IDS, leader_epoch=st.integers(0, 5), partition_epoch=st.integers(0, 5), version=st.just(0)),
        st.builds(md.PartitionChangeRecord, partition_id=st.integers(0, 1), topic_id=tid,
                  isr=st.one_of(st.none(), LISTS), leader=st.sampled_from([-2, -1, 1, 2]), version=st.just(0)),
        st.builds(md.RemoveTopicRecord, topic_id=tid),
        st.builds(md.ConfigRecord, resource_type=st.sampled_from([2, 4]), resource_name=st.sampled_from(["a", "1"]),
                  name=st.sampled_from(["x", "y"]), value=st.one_of(st.none(), st.sampled_from(["1", "2"]))),
        st.builds(md.ProducerIdsRecord, broker_id=IDS, next_producer_id=st.integers(0, 10**6)),
        st.builds(md.NoOpRecord),
        st.builds(md.AccessControlEntryRecord, resource_name=st.sampled_from(["a", "b"])),
    )


SEQ = st.lists(_records(), max_size=25).map(lambda rs: [md.encode(r) for r in rs])


@settings(max_examples=300, deadline=None)
@given(a=SEQ, b=SEQ)
def test_compaction_is_a_fold(a, b):
    assert compact(compact(a) + b) == compact(a + b)
    assert compact(compact(a)) == compact(a)


def test_the_image_holds_current_state():
    tid = TIDS[0]
    image = MetadataImage()
    for r in [md.FeatureLevelRecord(name="kraft.version", feature_level=1),
              md.FeatureLevelRecord(name="metadata.version", feature_level=25),
              md.RegisterBrokerRecord(broker_id=2, broker_epoch=7, fenced=True),
              md.UnfenceBrokerRecord(id=2, epoch=7),
              md.TopicRecord(name="orders", topic_id=tid),
              md.PartitionRecord(partition_id=0, topic_id=tid, replicas=[1, 2], isr=[1, 2], leader=1, leader_epoch=0,
                                 partition_epoch=0, version=0),
              md.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[2], leader=2, version=0),
              md.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[2, 1], version=0),
              md.ConfigRecord(resource_type=2, resource_name="orders", name="min.insync.replicas", value="2"),
              md.NoOpRecord()]:
        image.apply(r)
    out = image.records()
    assert [type(r).__name__ for r in out] == ["FeatureLevelRecord", "FeatureLevelRecord", "RegisterBrokerRecord",
                                               "TopicRecord", "PartitionRecord", "ConfigRecord"]
    assert out[0].name == "metadata.version"                 # Kafka writes metadata.version first
    assert out[2].fenced is False
    part = out[4]
    # leader changed once (epoch + 1); every change bumps the partition epoch
    assert (part.leader, part.isr, part.leader_epoch, part.partition_epoch) == (2, (2, 1), 1, 2)
    image.apply(md.RemoveTopicRecord(topic_id=tid))
    assert [type(r).__name__ for r in image.records()] == ["FeatureLevelRecord", "FeatureLevelRecord",
                                                           "RegisterBrokerRecord"]


def test_a_quorum_snapshots_the_image_and_a_lagging_voter_fetches_it(make_quorum, elect):
    cfg = QuorumConfig(max_bytes_between_snapshots=500, retention_max_bytes=0, log_cleaner_interval_ms=0)
    q = make_quorum(seed=6, config=cfg, snapshot_state=compact)
    leader = elect(q)
    lagging = [v for v in q.voters if v != leader.id][0]
    q.crash(lagging, power_loss=True)
    tid = TIDS[0]
    q.append([md.TopicRecord(name="orders", topic_id=tid),
              md.PartitionRecord(partition_id=0, topic_id=tid, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                                 leader_epoch=0, partition_epoch=0, version=0)])
    for i in range(30):
        q.append([md.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[1, 2, 3][: 1 + i % 3], version=0)])
        q.run(20)
    q.run(500)
    q.restart(lagging)
    q.run(3000)
    q.checker.check_logs()
    assert q.checker.violations == []
    node = q.nodes[lagging]
    assert q.checker.snapshots_loaded >= 1 and node.log_end_offset == q.leader().log_end_offset
    image = [md.decode(v) for v in node.read_snapshot(node.snapshots[-1])]
    assert [type(r).__name__ for r in image] == ["TopicRecord", "PartitionRecord"]   # 30 changes folded into one
    assert image[1].partition_epoch > 5
