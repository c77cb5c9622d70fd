"""``python -m engine run`` and ``python -m engine scenario``: output, errors, exit codes."""
import json
import pathlib
import subprocess
import sys

import pytest

from engine.cli import main
from engine.cluster.run import dump_command_log
from engine.cluster.scenarios import SCENARIOS, run_schedule

ROOT = pathlib.Path(__file__).resolve().parents[3]

COMMANDS = [
    {"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3},
    {"cmd": "advance", "ms": 500},
    {"cmd": "produce", "topic": "t", "values": ["a", "b"]},
    {"cmd": "advance", "ms": 500},
]


def write(tmp_path, text, name="c.jsonl"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_scenario_list_names_every_scenario(capsys):
    assert main(["scenario", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SCENARIOS)


def test_scenario_list_json(capsys):
    assert main(["scenario", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == set(SCENARIOS)
    assert all(set(r["expected"]) == {"hw", "epoch"} for r in rows)


def test_scenario_run_json_has_verdict_and_findings(capsys):
    assert main(["scenario", "run", "kip101-data-loss", "--truncation", "hw", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["verdict"]["matches"] is True
    assert [f["kind"] for f in s["findings"]] == ["check_acked_record_lost"]
    assert s["scenario"]["steps"][0]["narration"]


def test_scenario_run_text_says_whether_it_matches(capsys):
    assert main(["scenario", "run", "isr-shrink-acks-all"]) == 0
    out = capsys.readouterr().out
    assert "expected (epoch): MATCHES" in out and "checker: OK" in out


def test_run_prints_a_json_summary(tmp_path, capsys):
    path = write(tmp_path, dump_command_log(COMMANDS, seed=4))
    assert main(["run", "--commands", path, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["seed"] == 4 and s["ok"] and len(s["partitions"][0]["acknowledged"]) == 2


def test_run_is_deterministic(tmp_path, capsys):
    path = write(tmp_path, dump_command_log(COMMANDS))
    main(["run", "--commands", path, "--json", "--seed", "5"])
    first = json.loads(capsys.readouterr().out)["event_digest"]
    main(["run", "--commands", path, "--json", "--seed", "5"])
    assert json.loads(capsys.readouterr().out)["event_digest"] == first


def _first_hw_loss(root):
    for seed in range(300):
        run = run_schedule(seed, f"{root}/s{seed}", truncation="hw", brokers=3 + seed % 5, steps=8 + seed % 13)
        if any(f["kind"] == "check_acked_record_lost" for f in run.checker.findings):
            return seed, run.log, run.schedule_config
    raise AssertionError("no schedule lost a record under truncation=hw")


def test_a_failing_fault_schedule_replays_from_its_jsonl(tmp_path, capsys):
    seed, log, config = _first_hw_loss(tmp_path / "search")
    path = write(tmp_path, dump_command_log(log, seed=seed, config=config))
    assert main(["run", "--commands", path, "--truncation", "hw", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert not s["ok"] and any(f["kind"] == "check_acked_record_lost" for f in s["findings"])


@pytest.mark.parametrize("argv", [
    ["scenario", "run", "kip101-data-loss", "--truncation", "zk"],
    ["scenario", "run"],
    ["scenario"],
    ["run"],
    ["run", "--commands", "x", "--seed", "abc"],
])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_unknown_scenario_is_an_error_not_a_traceback(capsys):
    assert main(["scenario", "run", "nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown scenario 'nope'") and "Traceback" not in err


def test_invalid_command_in_the_log_names_its_line(tmp_path, capsys):
    path = write(tmp_path, '{"cmd": "advance", "ms": 1}\n{"cmd": "crash", "brokr": 1}\n')
    assert main(["run", "--commands", path]) == 1
    assert capsys.readouterr().err.startswith("error: line 2: crash: unknown field 'brokr'")


def test_engine_error_during_the_run_names_the_command(tmp_path, capsys):
    path = write(tmp_path, '{"cmd": "produce", "topic": "missing"}\n')
    assert main(["run", "--commands", path]) == 1
    assert "error: command 1 (produce): produce: unknown topic 'missing'" in capsys.readouterr().err


def test_missing_command_file_is_an_error(tmp_path, capsys):
    assert main(["run", "--commands", str(tmp_path / "none.jsonl")]) == 1
    assert capsys.readouterr().err.startswith("error: cannot read")


def test_bad_header_config_is_an_error(tmp_path, capsys):
    path = write(tmp_path, '{"config": {"brokers": 99}}\n{"cmd": "advance", "ms": 1}\n')
    assert main(["run", "--commands", path]) == 1
    assert capsys.readouterr().err.startswith("error: ") 


def test_python_dash_m_engine_run_reads_stdin(tmp_path):
    text = dump_command_log(COMMANDS)
    proc = subprocess.run([sys.executable, "-m", "engine", "run", "--commands", "-", "--json"], input=text,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["steps"] == len(COMMANDS)


def test_a_data_dir_that_is_not_empty_is_refused(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    assert main(["scenario", "run", "isr-shrink-acks-all", "--data-dir", str(tmp_path / "d")]) == 1
    assert "is not empty" in capsys.readouterr().err
    assert (tmp_path / "d" / "keep.txt").read_text() == "mine"


def test_a_data_dir_that_is_a_file_is_an_error_not_a_traceback(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    assert main(["scenario", "run", "isr-shrink-acks-all", "--data-dir", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
