"""``python -m engine dump --cluster-metadata-decoder`` on __cluster_metadata segments and
snapshots, as kafka-dump-log.sh prints them; bad input gives one line and exit 1, and no file
is changed."""
import hashlib
import io
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kraft import metadata
from engine.kraft.config import QuorumConfig
from engine.kraft.quorum import Quorum
from engine.kraft.records import data_batch
from engine.kraft.snapshots import SnapshotId, encode_snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TID = "5pTiLd2lTuyzRbL7F0Rw4A"


def dump(*args):
    return subprocess.run([sys.executable, "-m", "engine", "dump", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def _digests(d):
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


@pytest.fixture(scope="module")
def metadata_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("kraft-dump"))
    q = Quorum(root, voters=(1, 2, 3), seed=2,
               config=QuorumConfig(max_bytes_between_snapshots=300, log_cleaner_interval_ms=0)).start()
    q.run(3000)
    q.append([metadata.RegisterBrokerRecord(broker_id=1, incarnation_id=TID, broker_epoch=5,
                                            end_points=[dict(name="PLAINTEXT", host="localhost", port=9092,
                                                             security_protocol=0)])])
    q.run(50)
    q.append([metadata.TopicRecord(name="orders", topic_id=TID),
              metadata.PartitionRecord(partition_id=0, topic_id=TID, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                                       leader_epoch=0, partition_epoch=0, version=0),
              metadata.PartitionChangeRecord(partition_id=0, topic_id=TID, isr=[1, 2], version=0)])
    q.run(500)
    leader = q.leader()
    for n in q.nodes.values():
        n.shutdown()
    return os.path.join(root, f"node-{leader.id}", "__cluster_metadata-0")


def _payloads(out):
    return [json.loads(m) for m in re.findall(r" payload: (\{.*\})$", out, re.M)]


def test_segments_and_snapshots_decode_as_metadata_records(metadata_dir):
    before = _digests(metadata_dir)
    r = dump("--cluster-metadata-decoder", metadata_dir)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Log starting offset: 0" in out
    snap = [n for n in os.listdir(metadata_dir) if n.endswith(".checkpoint")]
    assert snap, os.listdir(metadata_dir)
    m = re.match(r"(\d{20})-(\d{10})\.checkpoint", snap[0])
    assert f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}" in out
    assert re.search(r'\| offset: 0 .* SnapshotHeader \{"version":0,"lastContainedLogTimestamp":\d+\}$', out, re.M)
    assert re.search(r' SnapshotFooter \{"version":0\}$', out, re.M)
    assert "controlType: LEADER_CHANGE(2)" in out
    payloads = _payloads(out)
    kinds = [p["type"] for p in payloads]
    assert kinds[:4] == ["REGISTER_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD"]
    reg = payloads[0]
    assert reg["version"] == 3 and reg["data"]["brokerId"] == 1 and reg["data"]["endPoints"][0]["port"] == 9092
    assert payloads[1] == {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "orders", "topicId": TID}}
    change = payloads[3]["data"]
    # Tagged fields appear only when set (Kafka's JSON converter): the ISR changed, the leader did not.
    assert change == {"partitionId": 0, "topicId": TID, "isr": [1, 2]}
    assert " key: " not in out                       # metadata records have no key
    assert _digests(metadata_dir) == before


def test_without_the_decoder_payloads_are_raw(metadata_dir):
    r = dump("--print-data-log", os.path.join(metadata_dir, "00000000000000000000.log"))
    assert r.returncode == 0 and "TOPIC_RECORD" not in r.stdout and "payload: " in r.stdout


def test_a_record_that_is_not_a_metadata_record_is_one_line_and_exit_1(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(data_batch([metadata.FenceBrokerRecord(id=1, epoch=2), b"\x00\x02\x00"], base_offset=0, epoch=1,
                               now_ms=5))
    before = seg.read_bytes()
    r = dump("--cluster-metadata-decoder", str(seg))
    assert r.returncode == 1
    assert '"type":"FENCE_BROKER_RECORD"' in r.stdout
    assert re.search(r"payload: Error at 1, skipping\. Could not deserialize metadata record with frame version 0",
                     r.stdout)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "offset 1" in last
    assert seg.read_bytes() == before


def test_a_broken_snapshot_is_one_line_and_exit_1(tmp_path):
    data = encode_snapshot(SnapshotId(3, 1), [metadata.encode(metadata.NoOpRecord())] * 2, 0, 0)
    good = tmp_path / "00000000000000000003-0000000001.checkpoint"
    good.write_bytes(data)
    r = dump("--cluster-metadata-decoder", str(good))
    assert r.returncode == 0 and r.stdout.count('"type":"NO_OP_RECORD"') == 2
    cut = tmp_path / "00000000000000000004-0000000001.checkpoint"
    cut.write_bytes(data[:-5])
    r = dump("--cluster-metadata-decoder", str(cut))
    assert r.returncode == 1 and "invalid bytes at the end" in r.stdout
    assert len(r.stderr.strip().splitlines()[-1].split("\n")) == 1
    named = tmp_path / "3-1.checkpoint"
    named.write_bytes(data)
    r = dump(str(named))
    assert r.returncode == 1 and "not a snapshot name" in r.stderr.strip().splitlines()[-1]
    assert named.read_bytes() == data and cut.read_bytes() == data[:-5]


def test_a_control_record_that_does_not_decode_is_reported(tmp_path):
    from engine.records import SimpleRecord, encode_batch
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(encode_batch([SimpleRecord(b"\x00", key=b"\x00\x00\x00\x03", timestamp=0)], base_offset=0,
                                 partition_leader_epoch=1, now_ms=0, is_control=True)[0])
    r = dump("--deep-iteration", str(seg))
    assert r.returncode == 1 and "controlType: SNAPSHOT_HEADER(3)" in r.stdout
    assert "SNAPSHOT_HEADER control record at offset 0 does not decode" in r.stderr.strip().splitlines()[-1]


@settings(max_examples=150, deadline=None)
@given(blob=st.one_of(
    st.binary(max_size=300),
    st.lists(st.binary(max_size=30), max_size=4).map(
        lambda vs: data_batch([b"\x01" + v for v in vs] or [b"\x01"], base_offset=0, epoch=1, now_ms=0)),
    st.lists(st.binary(max_size=30), max_size=4).map(lambda vs: encode_snapshot(SnapshotId(1, 1), vs, 0, 0))),
    name=st.sampled_from(["00000000000000000000.log", "00000000000000000007-0000000002.checkpoint"]))
def test_dump_of_any_bytes_as_metadata_never_raises_and_never_writes(tmp_path_factory, blob, name):
    from engine.dump import dump_files
    d = tmp_path_factory.mktemp("fuzz")
    path = d / name
    path.write_bytes(blob)
    out, err = io.StringIO(), io.StringIO()
    problems = dump_files([str(path)], out, err, cluster_metadata=True)
    if problems.any:
        assert "\n" not in problems.first()
    assert path.read_bytes() == blob
