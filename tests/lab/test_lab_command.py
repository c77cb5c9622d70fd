"""``manage.py lab``: bad input is one line and exit status 1, and nothing is written."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, message", [
    (["sweep", "--axis", "colour=red"], "unknown axis 'colour'"),
    (["sweep", "--axis", "acks=2"], "axis acks has no value '2'"),
    (["sweep", "--axis", "acks="], "the grid would be empty"),
    (["sweep", "--runs", "0"], "the grid would be empty"),
])
def test_bad_grids_are_refused_before_anything_runs(args, message, tmp_path):
    with pytest.raises(CommandError, match=message):
        call_command("lab", *args, "--out", str(tmp_path / "out"))
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_is_not_a_log_dir_is_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    with pytest.raises(CommandError, match="not a Kafka log directory"):
        call_command("lab", "analyze", str(tmp_path / "docs"), "--out", str(tmp_path / "out"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_no_spark_sweep_writes_rows_and_summary_and_prints_the_cells(tmp_path, capsys):
    call_command("lab", "sweep", "--axis", "truncation=hw,epoch", "--runs", "3", "--seed", "56", "--no-spark",
                 "--quiet", "--out", str(tmp_path / "s"))
    out = capsys.readouterr().out
    assert "6 runs in 2 cells (python)" in out and "truncation=hw: lost" in out
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["runs.jsonl", "summary.json"]
    assert not (tmp_path / ".s.partial").exists()


def _one_line_failure(proc):
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_missing_java_is_one_line_and_exit_1(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty-bin")     # no java anywhere on it
    proc = subprocess.run([sys.executable, "manage.py", "lab", "sweep", "--runs", "1", "--out", str(tmp_path / "o")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    line = _one_line_failure(proc)
    assert "Java is not installed" in line and "openjdk-17-jre-headless" in line
    assert not (tmp_path / "o").exists() and not (tmp_path / ".o.partial").exists()


def test_an_existing_output_is_refused_from_the_command_line(tmp_path):
    (tmp_path / "taken").mkdir()
    proc = subprocess.run([sys.executable, "manage.py", "lab", "sweep", "--runs", "1", "--no-spark",
                           "--out", str(tmp_path / "taken")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "already exists" in _one_line_failure(proc)
    assert list((tmp_path / "taken").iterdir()) == []


def test_a_sweep_without_out_lands_in_the_lab_directory_under_a_name_the_page_lists(tmp_path, settings):
    from kafkaviz.lab import jobs

    settings.KAFKAVIZ_LAB = {"DIR": str(tmp_path), "LAUNCH": False, "MAX_RUNS": 10, "LOG_ROOTS": [], "MASTER": None}
    call_command("lab", "sweep", "--runs", "1", "--no-spark", "--quiet")
    (made,) = [j.name for j in jobs.list_jobs()]
    assert jobs.get_job(made).state == "done"


def test_an_unreachable_master_is_one_line_saying_so_within_ten_seconds(tmp_path):
    import socket
    import time

    with socket.socket() as s:            # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "manage.py", "lab", "sweep", "--runs", "1", "--master",
                           f"spark://127.0.0.1:{port}", "--out", str(tmp_path / "o")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - t < 10
    line = _one_line_failure(proc)
    assert f"could not connect to the Spark master spark://127.0.0.1:{port}" in line
    assert not (tmp_path / "o").exists() and not (tmp_path / ".o.partial").exists()
