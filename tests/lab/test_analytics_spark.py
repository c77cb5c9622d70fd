"""Log analytics on Spark: figures agree with the engine's own counts and with kafka-python's
independent decode; damage is reported with file and byte position, never fatal."""
import shutil
import sys
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from engine.cluster.run import run_commands
from kafkaviz.lab.spark_jobs import LabError, analyze

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine" / "lab"))
from test_lab_logscan import write_log  # noqa: E402  (one way to write a test log)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    # A partition written by the Log directly: several segments, three codecs, 7 keys.
    logs = {"orders-0": write_log(root / "broker-9", "orders-0", batches=40, segment_bytes=1500)}
    # A replicated cluster's brokers: keyed records, a follower crash and restart on the way.
    cmds = [{"cmd": "create_topic", "topic": "t", "replication_factor": 3, "config": {"segment.bytes": 400}},
            {"cmd": "advance", "ms": 500}]
    for i in range(12):
        cmds.append({"cmd": "produce", "topic": "t", "key": f"user-{i % 5}", "count": 2, "value": f"e{i}"})
        cmds.append({"cmd": "advance", "ms": 200})
        if i == 4:
            cmds.append({"cmd": "crash", "broker": 2})
        if i == 8:
            cmds.append({"cmd": "restart", "broker": 2})
    cmds.append({"cmd": "advance", "ms": 3000})
    summary = run_commands(cmds, disk_root=str(root / "cluster"), config={"segment.index.bytes": 4096})
    return root, logs, summary


@pytest.fixture(scope="module")
def report(spark, logdir, tmp_path_factory):
    root, _, _ = logdir
    return analyze(root, tmp_path_factory.mktemp("out") / "analytics", spark=spark)


def kafka_python_figures(pdir):
    """Records, batches and compaction figures of a partition directory, decoded by kafka-python."""
    batches = records = 0
    latest = {}
    keyed = 0
    for f in sorted(Path(pdir).glob("*.log")):
        mr = MemoryRecords(f.read_bytes())
        while mr.has_next():
            batch = mr.next_batch()
            batches += 1
            for r in batch:
                records += 1
                if r.key is not None:
                    keyed += 1
                    latest[r.key] = r.offset
    return {"batches": batches, "records": records, "distinct_keys": len(latest),
            "compaction_removable": keyed - len(latest)}


def test_every_partition_agrees_with_kafka_pythons_decode(report, logdir):
    root = logdir[0]
    assert len(report["partitions"]) == 4       # orders-0, and t-0 on three brokers
    for p in report["partitions"]:
        mine = {k: p[k] for k in ("batches", "records", "distinct_keys", "compaction_removable")}
        assert mine == kafka_python_figures(root / p["partition_dir"]), p["partition_dir"]
        assert p["problem_count"] == 0


def test_figures_agree_with_the_engines_own_counts(report, logdir):
    _, logs, summary = logdir
    log = logs["orders-0"]
    orders = next(p for p in report["partitions"] if p["topic"] == "orders")
    assert orders["records"] == log.log_end_offset == 120
    assert orders["segments"] == len(log.segments) > 2
    assert (orders["first_offset"], orders["last_offset"]) == (0, log.log_end_offset - 1)
    assert orders["distinct_keys"] == 7 and orders["compaction_removable"] == 120 - 7
    assert set(orders["codecs"]) == {"none", "gzip", "lz4"}
    assert orders["index_entries"] > 0 and orders["index_spacing_bytes"] >= 150
    replicas = summary["partitions"][0]["replicas"]
    assert [len(r["records"]) for r in replicas] == [24, 24, 24]
    for r in replicas:
        part = next(p for p in report["partitions"] if p["partition_dir"] == f"cluster/broker-{r['broker']}/t-0")
        assert part["records"] == len(r["records"]) and part["last_offset"] == r["leo"] - 1
        assert part["distinct_keys"] == 5 and part["compaction_removable"] == 24 - 5


def test_a_cut_and_a_corrupted_batch_are_reported_and_the_rest_is_analysed(spark, logdir, tmp_path, settings):
    src = logdir[0] / "broker-9"
    bad = tmp_path / "bad"
    shutil.copytree(src, bad)
    segs = sorted((bad / "orders-0").glob("*.log"))
    cut = segs[-1].read_bytes()
    segs[-1].write_bytes(cut[:-7])                       # a torn tail
    first = bytearray(segs[0].read_bytes())
    second = 12 + int.from_bytes(first[8:12], "big")
    first[second + 40] ^= 0x55                           # a flipped byte in the second batch
    segs[0].write_bytes(bytes(first))
    out = analyze(bad, tmp_path / "analytics-20260101-000000-abcd", spark=spark)
    problems = {(p["file"], p["kind"]) for p in out["problems"]}
    assert (f"orders-0/{segs[0].name}", "corrupt") in problems
    assert (f"orders-0/{segs[-1].name}", "truncated") in problems
    corrupt = next(p for p in out["problems"] if p["kind"] == "corrupt")
    assert corrupt["position"] == second
    assert out["partitions"][0]["problem_count"] == 2
    assert out["partitions"][0]["records"] == 120 - 3 - 3   # two damaged batches of 3 records
    # The analytics page shows the same, damage first.
    from django.test import Client

    settings.KAFKAVIZ_LAB = {"DIR": str(tmp_path), "LAUNCH": False, "MAX_RUNS": 10, "LOG_ROOTS": [], "MASTER": None}
    html = Client().get("/lab/analytics/analytics-20260101-000000-abcd/").content.decode()
    assert "<code>orders-0</code>" in html and 'id="problems"' in html
    assert f"<code>orders-0/{segs[-1].name}</code>" in html and "truncated" in html and "CRC mismatch" in html
    assert "compaction would remove" in html


def test_a_directory_that_is_not_a_log_dir_leaves_nothing(spark, tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(LabError, match="not a Kafka log directory"):
        analyze(tmp_path / "photos", tmp_path / "out", spark=spark)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photos"]



def test_files_an_executor_cannot_see_fail_in_one_line_that_says_so(spark, logdir, tmp_path, monkeypatch):
    # On a cluster, paths travel and each executor opens them: a worker without the directory
    # at the same path (no shared filesystem) is told so, not handed a py4j trace.
    from kafkaviz.lab import spark_jobs

    src = tmp_path / "logs"
    shutil.copytree(logdir[0] / "broker-9", src)
    frames = spark_jobs._analytics_frames

    def vanishing(scanned):            # listed by the driver, gone before the executors look
        shutil.rmtree(src)
        return frames(scanned)
    monkeypatch.setattr(spark_jobs, "_analytics_frames", vanishing)
    with pytest.raises(LabError) as info:
        analyze(src, tmp_path / "out", spark=spark)
    line = str(info.value)
    assert line.startswith("an executor cannot see ") and "same path" in line and "\n" not in line
    assert not (tmp_path / "out").exists() and not (tmp_path / ".out.partial").exists()
