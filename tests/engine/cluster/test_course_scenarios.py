"""The replication lessons' scenarios (8, 9, 11), step by step against the engine's state.
Seeds: 000 §3.1-3.2 and 004 (LEO, HW = min LEO over the ISR, remote LEO, the follower learns the
HW one fetch later — seed-claims #74: the response carries the HW from before the update);
003/004 (acks 0/1/all; seed-claims #105: acks=all waits for the whole ISR); 003/004 elections
(seed-claims #99: first live ISR replica in assignment order)."""
import pytest

from engine.cluster.run import Run, make_config
from engine.cluster.scenarios import SCENARIOS, run_scenario


def play(name, tmp_path, upto, truncation="epoch"):
    sc = SCENARIOS[name]
    run = Run(sc.seed, make_config(sc.config, truncation=truncation), str(tmp_path))
    run.apply_all(sc.commands()[:upto])
    return run


def replica(run, broker):
    part = run.cluster.brokers[broker].partitions.get(("t", 0))
    return part


@pytest.mark.parametrize("name", ["fetch-loop", "acks-compared", "clean-election"])
@pytest.mark.parametrize("truncation", ["hw", "epoch"])
def test_course_scenarios_end_as_expected(name, truncation, tmp_path):
    summary = run_scenario(SCENARIOS[name], truncation=truncation, disk_root=str(tmp_path))
    assert summary["verdict"]["matches"], summary["verdict"]["mismatches"]


def test_fetch_loop_leo_first_then_followers_then_hw(tmp_path):
    run = play("fetch-loop", tmp_path, 4)              # m1 reached the leader
    leader = replica(run, 0)
    assert (leader.leo, leader.hw) == (1, 0)
    assert {b: r.leo for b, r in leader.remotes.items()} == {1: 0, 2: 0}
    assert replica(run, 1).leo == 0
    run.apply_all(SCENARIOS["fetch-loop"].commands()[4:5])   # followers appended m1
    assert [replica(run, b).leo for b in (1, 2)] == [1, 1]
    assert [replica(run, b).hw for b in (1, 2)] == [0, 0]   # min(own LEO, leader HW 0)
    assert replica(run, 0).hw == 0
    run.apply_all(SCENARIOS["fetch-loop"].commands()[5:6])   # next fetches carry offset 1
    leader = replica(run, 0)
    assert {b: r.leo for b, r in leader.remotes.items()} == {1: 1, 2: 1} and leader.hw == 1
    run.apply_all(SCENARIOS["fetch-loop"].commands()[6:7])
    assert [replica(run, b).hw for b in (0, 1, 2)] == [1, 1, 1]
    assert run.summary()["produce"][0]["result"] == "acked"


def test_acks_compared_one_is_acked_and_lost_all_is_never_acked(tmp_path):
    sc = SCENARIOS["acks-compared"]
    run = play("acks-compared", tmp_path, 11)
    assert replica(run, 0).leo == 4 and [replica(run, b).leo for b in (1, 2)] == [1, 1]
    results = {r["acks"]: r for r in run.summary()["produce"] if r["request_id"] > 1}
    assert results[1]["result"] == "acked" and results[-1]["result"] != "acked"
    run.apply_all(sc.commands()[11:])
    summary = run.summary()
    lost = [f for f in summary["findings"] if f["kind"] == "check_acked_record_lost"]
    assert [f["value"] for f in lost] == ["one"] and lost[0]["acks"] == 1
    last = next(r for r in summary["produce"] if r["request_id"] == 4)
    assert last["acks"] == -1 and last["result"] != "acked" and last["error"] == "REQUEST_TIMED_OUT"


def test_clean_election_picks_first_live_isr_replica_and_bumps_epoch(tmp_path):
    run = play("clean-election", tmp_path, 7)
    part = replica(run, 2)
    assert part.role == "leader" and part.leader_epoch == 1
    run.apply_all(SCENARIOS["clean-election"].commands()[7:])
    leader = replica(run, 1)
    assert leader.role == "leader" and leader.leader_epoch == 2
