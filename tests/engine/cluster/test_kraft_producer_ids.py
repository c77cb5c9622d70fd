"""Producer ids under KRaft (KIP-730): brokers hand ids out of 1,000-id blocks that the active
controller allocates with AllocateProducerIds and records as ProducerIdsRecord; the records'
bytes are Kafka's (the generated reader reads what the controller applied, CRCs check with
kafka-python). Also the bytes of lesson 17's snapshots and segments after its FetchSnapshot catch-up."""
import pytest
from kafka.record.memory_records import MemoryRecords

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.kraft_controller import metadata_records
from engine.cluster.metadata import ProducerIdsRecord, encode_record
from engine.cluster.producer_ids import PRODUCER_ID_BLOCK_SIZE
from engine.disk import Disk
from engine.errors import CoordinatorLoadInProgressError
from engine.kraft import metadata as kmeta
from engine.protocol.codec import encode_uvarint

SMALL = {"replica.lag.time.max.ms": 2000, "broker.session.timeout.ms": 3000}


def make(tmp_path, seed=0, **cfg):
    return Cluster(Disk(str(tmp_path), os_fsync=False), ClusterConfig.from_mapping({"brokers": 3, **SMALL, **cfg}),
                   seed)


def pid_records(c):
    node = c.controller.quorum.nodes[c.controller.active]
    return [(off, r) for off, r in metadata_records(node.log, 0, node.log_end_offset) if type(r) is ProducerIdsRecord]


def ask_every_broker(c):
    """An InitProducerId to each broker: the first is answered COORDINATOR_LOAD_IN_PROGRESS
    while the broker fetches its first block, as Kafka's RPCProducerIdManager does."""
    for b in sorted(c.brokers):
        with pytest.raises(CoordinatorLoadInProgressError):
            c.controller.allocate_producer_id(b)
    c.advance(1000)


@pytest.mark.parametrize("mode", [{"kraft": True}, {"controllers": 3}])
def test_each_broker_gets_a_block_recorded_as_a_committed_producer_ids_record(tmp_path, mode):
    c = make(tmp_path, **mode)
    assert pid_records(c) == [] and all(b.producer_ids.block is None for b in c.brokers.values())
    t0 = c.scheduler.now_ms()
    p = c.create_producer("p", idempotent=True)          # the client retries until a broker has a block
    assert p.producer_id == 0 and c.scheduler.now_ms() - t0 == 100     # one retry.backoff.ms
    assert [r.BrokerId for _, r in pid_records(c)] == [0]
    for b in (1, 2):
        with pytest.raises(CoordinatorLoadInProgressError):
            c.controller.allocate_producer_id(b)
    c.advance(1000)
    recs = [r for _, r in pid_records(c)]
    blocks = {b: c.brokers[b].producer_ids.block for b in c.brokers}
    assert sorted(blocks.values()) == [(i * PRODUCER_ID_BLOCK_SIZE, PRODUCER_ID_BLOCK_SIZE) for i in range(3)]
    # One record per block, NextProducerId the first id after it, with the broker's epoch.
    assert sorted((r.BrokerId, r.NextProducerId) for r in recs) == \
        sorted((b, first + size) for b, (first, size) in blocks.items())
    assert all(r.BrokerEpoch == c.brokers[r.BrokerId].broker_epoch for r in recs)
    assert c.controller.image.next_producer_id == 3 * PRODUCER_ID_BLOCK_SIZE
    got = [e.to_dict() for e in c.events.envelopes if e.to_dict()["kind"] == "producer_id_block_received"]
    assert sorted(e["broker"] for e in got) == [0, 1, 2]


def test_ids_come_from_the_brokers_block_and_the_next_block_is_prefetched_at_90_percent(tmp_path):
    c = make(tmp_path, kraft=True)
    ask_every_broker(c)
    ids = c.brokers[1].producer_ids
    first, size = ids.block
    got = [c.controller.allocate_producer_id(1) for _ in range(int(size * 0.9))]
    assert got == list(range(first, first + int(size * 0.9)))
    assert not ids.inflight and ids.prefetched is None
    got.append(c.controller.allocate_producer_id(1))      # the 90 % mark: AllocateProducerIds goes out
    assert ids.inflight
    c.advance(1000)
    assert ids.prefetched == (3 * size, size)              # the next block after every one handed out
    got += [c.controller.allocate_producer_id(1) for _ in range(size - len(got) + 5)]
    assert got == list(range(first, first + size)) + list(range(3 * size, 3 * size + 5))
    assert len(set(got)) == len(got)


def test_a_used_up_block_answers_coordinator_load_in_progress_until_the_next_one_commits(tmp_path):
    c = make(tmp_path, controllers=3)
    ask_every_broker(c)
    ids = c.brokers[0].producer_ids
    for _ in range(PRODUCER_ID_BLOCK_SIZE):
        c.controller.allocate_producer_id(0)
    ids.prefetched = None                                  # as if the prefetch had not come back yet
    ids.inflight = False
    with pytest.raises(CoordinatorLoadInProgressError, match="waiting for the next block"):
        c.controller.allocate_producer_id(0)
    assert ids.inflight                                    # ... and it asked for one
    c.advance(1000)
    assert c.controller.allocate_producer_id(0) == 4 * PRODUCER_ID_BLOCK_SIZE


def test_no_block_is_handed_out_twice_across_a_controller_failover_and_a_broker_restart(tmp_path):
    c = make(tmp_path, controllers=3)
    ask_every_broker(c)
    seen = {c.brokers[b].producer_ids.block for b in c.brokers}
    old = c.controller.active
    c.crash(old)
    c.advance(6000)
    assert c.controller.active not in (None, old)
    c.crash(2)
    c.restart(2)
    c.advance(6000)
    assert c.brokers[2].producer_ids.block is None             # a restarted broker has none ...
    with pytest.raises(CoordinatorLoadInProgressError):
        c.controller.allocate_producer_id(2)
    c.advance(1000)
    new_block = c.brokers[2].producer_ids.block
    assert new_block is not None and new_block not in seen     # ... and gets a fresh block
    assert new_block[0] >= 3 * PRODUCER_ID_BLOCK_SIZE
    firsts = [r.NextProducerId - PRODUCER_ID_BLOCK_SIZE for _, r in pid_records(c)]
    assert len(firsts) == len(set(firsts)) and firsts == sorted(firsts)


def test_a_stale_broker_epoch_is_refused(tmp_path):
    from engine.cluster.producer_ids import AllocateProducerIdsRequest
    c = make(tmp_path, controllers=3)
    ask_every_broker(c)
    before = len(pid_records(c))
    sent = []
    send = c.network.send
    c.network.send = lambda src, dst, msg: (sent.append(msg), send(src, dst, msg))[1]
    c.controller.on_allocate_producer_ids(1, AllocateProducerIdsRequest(1, 999, 7))
    assert [m.error for m in sent if getattr(m, "api", "") == "AllocateProducerIdsResponse"] == ["STALE_BROKER_EPOCH"]
    c.advance(500)
    assert len(pid_records(c)) == before


def test_producer_ids_records_decode_with_the_generated_reader_and_batches_check_with_kafka_python(tmp_path):
    """Each ProducerIdsRecord's body, read with the reader generated from Kafka's
    ProducerIdsRecord.json, equals the record the controller applied; every batch of every
    node's metadata log checks its CRC with kafka-python."""
    c = make(tmp_path, controllers=3)
    ask_every_broker(c)
    codec = kmeta.body_codec(15, 0)
    head = bytearray()
    for n in (1, 15, 0):                                   # frame version, apiKey, version
        encode_uvarint(head, n)
    node = c.controller.quorum.nodes[c.controller.active]
    applied = [r for _, r in pid_records(c)]
    bodies = []
    data = node.log.read(0, 1 << 30, trace=False).records
    mr = MemoryRecords(bytes(data))
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        if batch.is_control_batch:
            continue
        for r in batch:
            if bytes(r.value).startswith(bytes(head)):
                body, end = codec.decode(bytes(r.value)[len(head):])
                assert end == len(r.value) - len(head)
                bodies.append(body)
    assert [(b["broker_id"], b["broker_epoch"], b["next_producer_id"]) for b in bodies] == \
        [(r.BrokerId, r.BrokerEpoch, r.NextProducerId) for r in applied]
    assert len(bodies) == 3
    for nid, n in c.controller.quorum.nodes.items():
        if n.alive:
            mr = MemoryRecords(bytes(n.log.read(n.log_start_offset, 1 << 30, trace=False).records))
            while mr.has_next():
                assert mr.next_batch().validate_crc(), nid


def test_a_transactional_producer_retries_init_producer_id_until_its_coordinator_has_a_block(tmp_path):
    c = make(tmp_path, controllers=3)
    c.create_producer("tx", transactional_id="tx-1")
    c.init_transactions("tx")
    c.advance(3000)
    prod = c.producers["tx"]
    assert prod.txn_state == "ready" and prod.producer_id >= 0
    answers = [e.to_dict() for e in c.events.envelopes if e.to_dict()["kind"] == "txn_request"
               and e.to_dict()["api"] == "init_producer_id"]
    errors = [a["error"] for a in answers]
    assert "COORDINATOR_LOAD_IN_PROGRESS" in errors and errors[-1] == "NONE"
    assert errors.index("COORDINATOR_LOAD_IN_PROGRESS") < len(errors) - 1
    owner = answers[-1]["coordinator"]
    first, size = c.brokers[owner].producer_ids.block
    assert first <= prod.producer_id < first + size


def test_lesson_17s_snapshots_and_segments_check_with_kafka_python_and_hold_what_the_nodes_applied(tmp_path):
    """After the controller-quorum scenario (snapshots by interval, a log start moved, two FetchSnapshot
    catch-ups): every batch of every node's segments and snapshots checks its CRC with kafka-python,
    each snapshot's records decode with the generated reader, and the state a node rebuilt from its
    snapshot is the committed log's replay (the checker's applied_not_committed_prefix)."""
    from engine.cluster.run import Run, make_config
    from engine.cluster.scenarios import SCENARIOS
    from engine.kraft.image import compact
    sc = SCENARIOS["controller-quorum"]
    run = Run(sc.seed, make_config(sc.config, truncation="epoch"), str(tmp_path))
    run.apply_all(sc.commands())
    c = run.cluster
    ctl = c.controller
    ctl.quorum.checker.check_logs()
    ctl.quorum.checker.check_applied()
    assert ctl.quorum.checker.violations == []
    loaded = {e.to_dict()["node"] for e in c.events.envelopes if e.to_dict()["kind"] == "raft_snapshot_loaded"}
    assert loaded == {0, 102}
    for nid, node in ctl.quorum.nodes.items():
        files = [n for n in c.disk.listdir(node.dir) if n.endswith((".log", ".checkpoint"))]
        assert any(n.endswith(".checkpoint") for n in files), nid
        for name in files:
            mr = MemoryRecords(bytes(c.disk.read_all(f"{node.dir}/{name}")))
            while mr.has_next():
                assert mr.next_batch().validate_crc(), (nid, name)
        for sid in node.snapshots:
            # The snapshot is the metadata image of the committed records below its end offset.
            below = [encode_record(r) for off, r in ctl.committed if off < sid.end_offset]
            assert [kmeta.decode(v) for v in node.read_snapshot(sid)] == [kmeta.decode(v) for v in compact(below)]
        assert ctl.applied_offset(nid) == ctl.committed_offset
