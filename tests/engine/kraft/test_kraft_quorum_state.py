"""quorum-state: Kafka's data_version 0 JSON, atomically rewritten, read back after a restart."""
import json

from engine.kraft.quorum_state import ElectionState, QuorumStateFile



def test_quorum_state_is_kafkas_version_0_json(make_quorum, elect):
    q = make_quorum(seed=1)
    leader = elect(q)
    body = json.loads(q.disk.read_all(f"node-{leader.id}/__cluster_metadata-0/quorum-state"))
    assert body == {"clusterId": "", "leaderId": leader.id, "leaderEpoch": leader.epoch, "votedId": leader.id,
                    "appliedOffset": 0, "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
                    "data_version": 0}


def test_missing_or_garbled_quorum_state_reads_as_none(make_quorum):
    q = make_quorum()
    f = QuorumStateFile(q.disk, "elsewhere", (1, 2, 3))
    assert f.read() is None
    q.disk.mkdir("elsewhere")
    q.disk.append("elsewhere/quorum-state", b"{not json")
    assert f.read() is None
    f.write(ElectionState(7, -1, 2))
    assert f.read() == ElectionState(7, -1, 2)


def test_a_restarted_voter_comes_back_in_its_epoch_even_after_power_loss(make_quorum, elect):
    q = make_quorum(seed=2)
    leader = elect(q)
    follower = next(n for n in q.voters if n != leader.id)
    epoch = q.nodes[follower].epoch
    q.crash(follower, power_loss=True)
    q.restart(follower)
    node = q.nodes[follower]
    assert node.epoch == epoch and node.state == "follower" and node.leader_id == leader.id
    assert q.checker.violations == []


def test_a_restarted_leader_resigns_the_epoch_it_led(make_quorum, elect):
    q = make_quorum(seed=3)
    leader = elect(q)
    epoch = leader.epoch
    q.crash(leader.id, power_loss=False)
    q.restart(leader.id)
    assert (leader.state, leader.epoch) == ("resigned", epoch)
