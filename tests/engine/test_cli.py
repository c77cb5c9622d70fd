"""engine.cli: `python -m engine produce|dump|…`, its partitioner and its error handling."""
import os
import pathlib
import struct
import subprocess
import sys

import pytest

from engine.cli import main, murmur2, partition_for_key

REPO = pathlib.Path(__file__).resolve().parents[2]


def _run(*argv, cwd=REPO):
    proc = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


# ---- partitioner ---------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    # Kafka's own test vectors for Utils.murmur2
    ("21", -973932308), ("foobar", -790332482), ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829), ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ("abc", 479470107),
])
def test_murmur2_matches_kafkas_test_vectors(text, expected):
    assert murmur2(text.encode()) == expected


def test_murmur2_agrees_with_kafka_python_for_every_tail_length():
    from kafka.partitioner.default import murmur2 as reference
    for n in range(0, 40):
        data = bytes((i * 37 + n) % 256 for i in range(n))
        assert murmur2(data) & 0xFFFFFFFF == reference(data) & 0xFFFFFFFF


def test_partition_for_key_is_positive_murmur2_modulo_partitions():
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7


# ---- produce -------------------------------------------------------------------

def test_produce_writes_one_directory_per_partition_with_20_digit_segment_names(tmp_path):
    code = main(["produce", "--dir", str(tmp_path), "--topic", "orders", "--partitions", "3", "--count", "60",
                 "--value-bytes", "50", "--key-cardinality", "10", "--segment-bytes", "1000"])
    assert code == 0
    assert sorted(os.listdir(tmp_path)) == ["orders-0", "orders-1", "orders-2"]
    for d in sorted(tmp_path.iterdir()):
        logs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
        assert logs and logs[0] == "00000000000000000000.log"
        for name in logs:
            stem = name[:-4]
            assert len(stem) == 20 and stem.isdigit()
            assert (d / f"{stem}.index").exists() and (d / f"{stem}.timeindex").exists()
        assert all((d / n).stat().st_size <= 1000 for n in logs)


def _read_back(root, topic, partition):
    from engine.clock import Scheduler, VirtualClock
    from engine.config import LogConfig
    from engine.disk import Disk
    from engine.events import EventLog
    from engine.log import Log
    clock = VirtualClock(0)
    log = Log(Disk(root), f"{topic}-{partition}", topic, partition, LogConfig(), Scheduler(clock), EventLog(clock),
              schedule_tasks=False)
    records = log.records()
    log.close()
    return records


def test_produced_records_read_back_with_keys_partitioned_by_murmur2(tmp_path):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--partitions", "2", "--count", "40",
          "--value-bytes", "17", "--key-cardinality", "5", "--batch-size", "3", "--seed", "7"])
    seen = 0
    for p in range(2):
        records = _read_back(tmp_path, "t", p)
        assert [r.offset for r in records] == list(range(len(records)))
        for r in records:
            assert partition_for_key(r.key, 2) == p
            assert r.key.startswith(b"key-") and len(r.value) == 17
        seen += len(records)
    assert seen == 40


def test_produce_is_deterministic_for_a_seed(tmp_path):
    for name in ("a", "b"):
        main(["produce", "--dir", str(tmp_path / name), "--topic", "t", "--count", "20", "--seed", "3"])
    assert (tmp_path / "a/t-0/00000000000000000000.log").read_bytes() == \
           (tmp_path / "b/t-0/00000000000000000000.log").read_bytes()


def test_keyless_records_stick_to_a_partition_per_batch_then_move(tmp_path):
    """Kafka's default partitioner (KIP-480): a keyless batch fills on one partition;
    the next batch goes to a different one (never round-robin record by record)."""
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--partitions", "3", "--count", "30",
          "--batch-size", "5", "--seed", "4"])
    batches = []
    for p in range(3):
        records = _read_back(tmp_path, "t", p)
        assert all(r.key is None for r in records)
        assert len(records) % 5 == 0
        batches += [(r.timestamp, p) for r in records[::5]]
    order = [p for _, p in sorted(batches)]
    assert len(order) == 6
    assert all(a != b for a, b in zip(order, order[1:]))


def test_produce_closes_logs_cleanly_so_indexes_are_trimmed(tmp_path):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "200", "--value-bytes", "100",
          "--segment-bytes", "5000", "--index-interval-bytes", "500"])
    d = tmp_path / "t-0"
    for name in os.listdir(d):
        if name.endswith(".index"):
            assert (d / name).stat().st_size % 8 == 0 and (d / name).stat().st_size < 10485760
        if name.endswith(".timeindex"):
            assert (d / name).stat().st_size % 12 == 0 and (d / name).stat().st_size < 10485756


def test_produce_summary_lists_each_partition(tmp_path, capsys):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--partitions", "2", "--count", "10"])
    out = capsys.readouterr().out
    assert "t-0" in out and "t-1" in out and "records" in out


def test_produce_writes_nothing_outside_its_directory(tmp_path):
    before = sorted(os.listdir(REPO))
    target = tmp_path / "data"
    code, _, err = _run("produce", "--dir", str(target), "--topic", "t", "--partitions", "2", "--count", "5")
    assert code == 0, err
    assert sorted(os.listdir(REPO)) == before
    assert sorted(os.listdir(tmp_path)) == ["data"]
    assert sorted(os.listdir(target)) == ["t-0", "t-1"]


# ---- dump through the CLI ----------------------------------------------------------

def test_dump_subcommand_prints_a_produced_segment(tmp_path):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "3", "--value-bytes", "5"])
    log = tmp_path / "t-0" / "00000000000000000000.log"
    code, out, err = _run("dump", str(log), "--print-data-log")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    assert [l.split()[1] for l in lines if l.startswith("baseOffset:")] == ["0", "1", "2"]
    assert sum(l.startswith("| offset:") and " payload: " in l for l in lines) == 3


# ---- errors --------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["produce", "--dir", "X", "--topic", "t", "--count", "-1"], "--count"),
    (["produce", "--dir", "X", "--topic", "t", "--count", "5", "--partitions", "0"], "--partitions"),
    (["produce", "--dir", "X", "--topic", "t", "--count", "ten"], "--count"),
    (["produce", "--topic", "t", "--count", "5"], "--dir"),
    ([], "command"),
    (["dump"], "FILE"),
    (["nonsense"], "invalid choice"),
])
def test_bad_arguments_are_usage_errors_with_exit_code_2(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_bad_topic_name_is_an_engine_error_with_exit_code_1(tmp_path):
    code, out, err = _run("produce", "--dir", str(tmp_path), "--topic", "a/b", "--count", "1")
    assert code == 1
    assert err.startswith("error: ") and "a/b" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_segment_bytes_below_kafkas_minimum_is_rejected_with_the_range(tmp_path):
    code, _, err = _run("produce", "--dir", str(tmp_path), "--topic", "t", "--count", "1", "--segment-bytes", "5")
    assert code == 1
    assert "segment_bytes must be at least 14, got 5" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_negative_count_through_the_real_entry_point_exits_2_without_traceback(tmp_path):
    code, _, err = _run("produce", "--dir", str(tmp_path), "--topic", "t", "--count", "-3")
    assert code == 2
    assert "usage:" in err and "Traceback" not in err


def test_dump_of_a_missing_file_is_a_clear_error(tmp_path):
    code, out, err = _run("dump", str(tmp_path / "00000000000000000000.log"))
    assert code == 1
    assert err.strip() == f"error: no such file: {tmp_path / '00000000000000000000.log'}"
    assert out == ""


def test_dump_of_a_file_not_named_by_an_offset_is_an_error(tmp_path):
    path = tmp_path / "segment.index"
    path.write_bytes(struct.pack(">ii", 1, 0))
    code, _, err = _run("dump", str(path))
    assert code == 1 and "base offset" in err and "Traceback" not in err


def test_dir_that_is_a_file_is_a_clear_error(tmp_path):
    target = tmp_path / "plain-file"
    target.write_text("x")
    code, _, err = _run("produce", "--dir", str(target), "--topic", "t", "--count", "1")
    assert code == 1 and "is not a directory" in err and "Traceback" not in err


def test_dump_of_a_partition_directory_dumps_its_segment_files_in_order(tmp_path):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "30", "--segment-bytes", "1000"])
    code, out, err = _run("dump", str(tmp_path / "t-0"))
    assert code == 0, err
    dumped = [line.split("/")[-1] for line in out.splitlines() if line.startswith("Dumping ")]
    expected = sorted(n for n in os.listdir(tmp_path / "t-0") if n.split(".")[0].isdigit())
    assert dumped == expected and len(dumped) >= 6


def test_dump_accepts_kafkas_comma_separated_files_option(tmp_path, capsys):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "2"])
    log = tmp_path / "t-0" / "00000000000000000000.log"
    index = tmp_path / "t-0" / "00000000000000000000.index"
    capsys.readouterr()
    assert main(["dump", "--files", f"{log},{index}"]) == 0
    dumped = [l for l in capsys.readouterr().out.splitlines() if l.startswith("Dumping ")]
    assert dumped == [f"Dumping {log}", f"Dumping {index}"]


def test_produce_runs_scheduled_retention_on_the_virtual_clock(tmp_path, capsys):
    main(["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "400", "--value-bytes", "100",
          "--segment-bytes", "2000", "--retention-ms", "60000", "--ms-per-record", "1000"])
    logs = sorted(n for n in os.listdir(tmp_path / "t-0") if n.endswith(".log"))
    # 400 s of virtual time: the passes at 300 s (and files removed 60 s later) dropped the oldest segments
    assert logs[0] != "00000000000000000000.log"
    start = int(logs[0][:20])
    records = _read_back(tmp_path, "t", 0)
    assert records[0].offset == start and records[-1].offset == 399


def test_cluster_subcommands_are_registered_on_the_top_level_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("produce", "dump", "storage-experiment", "run", "scenario"):
        assert command in out
