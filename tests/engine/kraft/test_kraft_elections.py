"""Targeted elections: KIP-595 states with KIP-996 pre-vote, one behaviour per test."""
import pytest

from engine.errors import NotLeaderOrFollowerError
from engine.kraft.config import QuorumConfig
from engine.kraft.messages import VoteRequest



def kinds(q, kind):
    return [e.event for e in q.events.envelopes if e.event.kind == kind]


def test_three_voters_elect_one_leader_through_prospective_and_candidate(make_quorum, elect):
    q = make_quorum(seed=0)
    leader = elect(q)
    assert leader.epoch == 1
    path = [(c.old_state, c.state) for c in kinds(q, "raft_state_changed") if c.node == leader.id]
    assert path[-3:] == [("unattached", "prospective"), ("prospective", "candidate"), ("candidate", "leader")]
    followers = [q.nodes[v] for v in q.voters if v != leader.id]
    assert all(f.state == "follower" and f.leader_id == leader.id for f in followers)


def test_a_single_voter_leads_alone(make_quorum, elect):
    q = make_quorum(voters=(7,))
    leader = elect(q)
    assert leader.id == 7
    q.append([b"x"])
    assert leader.high_watermark == 2


def test_the_leader_writes_a_leader_change_message_first_and_commits_past_it(make_quorum, elect):
    q = make_quorum(seed=5)
    leader = elect(q)
    first = leader.log.batches(0, 1)[0]
    assert first.is_control and first.partition_leader_epoch == leader.epoch
    assert leader.high_watermark == 1


def test_only_the_leader_appends(make_quorum, elect):
    q = make_quorum(seed=1)
    leader = elect(q)
    other = q.nodes[next(v for v in q.voters if v != leader.id)]
    with pytest.raises(NotLeaderOrFollowerError):
        other.append([b"no"])


def test_records_commit_once_a_majority_has_them(make_quorum, elect):
    q = make_quorum(seed=2)
    leader = elect(q)
    base, last = leader.append([b"a", b"b"])
    assert leader.high_watermark <= base          # the followers have not fetched yet
    q.run(50)
    assert leader.high_watermark == last + 1
    # A follower learns the new HW on its next answered fetch: at the latest when its parked
    # fetch times out at the leader (fetch max wait).
    q.run(QuorumConfig().fetch_max_wait_ms)
    assert all(q.nodes[v].high_watermark == last + 1 for v in q.voters)


def test_leader_killed_a_new_leader_is_elected_in_a_higher_epoch(make_quorum, elect):
    q = make_quorum(voters=(1, 2, 3, 4, 5), seed=8)
    old = elect(q)
    leader_epoch = old.epoch
    q.append([b"before"])
    q.run(100)
    q.crash(old.id)
    new = elect(q)
    assert new.id != old.id and new.epoch > leader_epoch
    assert q.append([b"after"]) is not None
    q.run(100)
    q.checker.check_logs()
    assert q.checker.violations == []
    assert [r.value for r in new.log.records(0, new.high_watermark) if r.value in (b"before", b"after")] == [b"before", b"after"]


def test_a_majority_down_means_no_leader_and_no_commits(make_quorum, elect):
    q = make_quorum(voters=(1, 2, 3, 4, 5), seed=3)
    leader = elect(q)
    others = [v for v in q.voters if v != leader.id]
    for v in others[:3]:                           # three of five voters down: no majority alive
        q.crash(v)
    hw = leader.high_watermark
    leader.append([b"stuck"])
    q.run(30_000)
    assert leader.high_watermark == hw
    assert q.leader() is None                      # check quorum made it resign; nobody can win
    assert max(q.nodes[v].epoch for v in others[3:]) >= 1
    assert q.checker.committed and len(q.checker.committed) == hw


def test_a_partitioned_leader_resigns_by_check_quorum(make_quorum, elect):
    q = make_quorum(seed=6)
    leader = elect(q)
    q.isolate(leader.id)
    q.run(QuorumConfig().check_quorum_timeout_ms + 50)
    resigned = [c for c in kinds(q, "raft_state_changed") if c.node == leader.id and c.state == "resigned"]
    assert resigned and "check quorum" in resigned[0].reason
    new = elect(q, after_epoch=leader.epoch)         # the majority side elected a new leader meanwhile
    assert new.id != leader.id


def test_pre_vote_stops_a_rejoining_partitioned_voter_from_disrupting_the_leader(make_quorum, elect):
    q = make_quorum(seed=9)
    leader = elect(q)
    loner = next(v for v in q.voters if v != leader.id)
    q.isolate(loner)
    q.run(20_000)                                    # it times out again and again, in pre-vote only
    tries = [v for v in kinds(q, "raft_vote_sent") if v.node == loner]
    assert len(tries) >= 4 and all(v.pre_vote for v in tries)
    assert q.nodes[loner].epoch == leader.epoch      # a pre-vote never bumps the epoch
    q.heal_all()
    q.run(10_000)
    assert q.leader() is leader and leader.epoch == q.nodes[loner].epoch
    assert q.nodes[loner].state == "follower"


def test_what_pre_vote_prevents_a_real_vote_at_a_higher_epoch_deposes_the_leader(make_quorum, elect):
    q = make_quorum(seed=9)
    leader = elect(q)
    loner = next(v for v in q.voters if v != leader.id)
    last = q.nodes[loner].last_fetched_epoch, q.nodes[loner].log_end_offset
    # What the rejoining voter would send without KIP-996: a Vote for epoch + 1.
    q.network.send(loner, leader.id, VoteRequest(loner, leader.epoch + 1, leader.id, *last, pre_vote=False))
    epoch = leader.epoch
    q.run(5)
    assert leader.state == "unattached" and leader.epoch == epoch + 1
    # The same request as a pre-vote changes nothing.
    leader2 = elect(q, after_epoch=leader.epoch)
    q.network.send(loner, leader2.id, VoteRequest(loner, leader2.epoch + 1, leader2.id, *last, pre_vote=True))
    q.run(5)
    assert leader2.state == "leader" and q.leader() is leader2


def test_graceful_shutdown_hands_over_through_end_quorum_epoch(make_quorum, elect):
    q = make_quorum(seed=11)
    leader = elect(q)
    q.run(500)
    t0 = q.now_ms()
    q.shutdown(leader.id)
    sent = kinds(q, "raft_end_epoch_sent")
    assert sent and all(len(e.preferred_successors) == 2 for e in sent)
    new = elect(q)
    # The first preferred successor asks for pre-votes at once, but Kafka's EndQuorumEpoch only
    # shortens the other follower's fetch timeout: that follower has fetched from the old leader
    # (hasFetchedFromLeader stays set) and refuses, as does the resigned leader. The second
    # successor's shortened timeout (500 ms) then fires and the first, now a fresh follower,
    # grants it: a handover far sooner than a fetch timeout either way.
    first, second = sent[0].preferred_successors
    refused = [e for e in kinds(q, "raft_vote_answered") if e.to == first and e.pre_vote and not e.granted]
    assert any("answered my fetches" in e.reason for e in refused)
    assert new.id in (first, second)
    assert q.now_ms() - t0 < QuorumConfig().fetch_timeout_ms


def test_an_observer_fetches_the_log_without_voting(make_quorum, elect):
    q = make_quorum(observers=(100,), seed=12)
    leader = elect(q)
    leader.append([b"meta"])
    q.run(2000)
    obs = q.nodes[100]
    assert obs.state == "follower" and obs.leader_id == leader.id
    assert obs.log_end_offset == leader.log_end_offset and obs.high_watermark == leader.high_watermark
    assert not [v for v in kinds(q, "raft_vote_sent") if v.to == 100 or v.node == 100]
    assert 100 not in leader.end_offsets             # its fetches never count toward the HW


def test_a_follower_truncates_an_uncommitted_tail_on_a_diverging_epoch(make_quorum, elect):
    q = make_quorum(seed=13)
    old = elect(q)
    q.isolate(old.id, both=True)
    old.append([b"never committed"])                 # a tail only the isolated leader has
    new = elect(q, after_epoch=old.epoch)
    new.append([b"committed"])
    q.run(100)
    q.heal_all()
    q.run(5000)
    assert old.state == "follower" and old.leader_id == new.id
    assert kinds(q, "raft_truncated")
    assert b"never committed" not in [r.value for r in old.log.records()]
    q.checker.check_logs()
    assert q.checker.violations == []


def test_the_same_seed_replays_the_same_event_stream(make_quorum, elect):
    digests = []
    for _ in range(2):
        q = make_quorum(voters=(1, 2, 3, 4, 5), seed=21)
        elect(q)
        q.crash(q.leader().id)
        elect(q)
        digests.append(q.events.digest())
    assert digests[0] == digests[1]
