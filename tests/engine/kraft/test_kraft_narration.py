"""Every event a quorum emits reads as a sentence of its own, in both languages: the timeline of
a future KRaft lesson, and what ``engine.narration.describe`` shows instead of raw fields."""
import re

import pytest

from engine import narration
from engine.kraft.quorum import Quorum
from engine.kraft.schedules import _apply, fault_schedule


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_every_quorum_event_of_a_fault_schedule_has_a_sentence(seed, tmp_path):
    voters = 3 if seed % 2 == 0 else 5
    q = Quorum(str(tmp_path), voters=range(1, voters + 1), observers=(100,), seed=seed, keep_events=None)
    q.start()
    q.run(2500)
    counter = [0]
    for action in fault_schedule(seed, voters, 20, (100,)):
        q.run(action["after_ms"])
        _apply(q, action, counter)
    q.run(5000)
    kinds = set()
    for env in q.events.envelopes:
        ev = env.to_dict()
        if not ev["kind"].startswith("raft_"):
            continue
        kinds.add(ev["kind"])
        for lang in narration.LANGS:
            text = narration._TABLES[lang][ev["kind"]](ev)   # no fallback: a wrong field raises here
            assert text and "{" not in text
    assert {"raft_state_changed", "raft_vote_sent", "raft_fetch_sent", "raft_appended",
            "raft_high_watermark_changed"} <= kinds


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_reason_a_quorum_node_gives_is_said_in_chinese(seed, tmp_path):
    # A state change's or a refused vote's reason is written by the engine in English; the
    # Chinese timeline (and lesson 17's prediction evidence) says each one in Chinese.
    voters = 3 if seed % 2 == 0 else 5
    q = Quorum(str(tmp_path), voters=range(1, voters + 1), observers=(100,), seed=seed, keep_events=None)
    q.start()
    q.run(2500)
    counter = [0]
    for action in fault_schedule(seed, voters, 20, (100,)):
        q.run(action["after_ms"])
        _apply(q, action, counter)
    q.run(5000)
    reasons = {env.to_dict()["reason"] for env in q.events.envelopes
               if env.event.kind in ("raft_state_changed", "raft_vote_answered")} - {""}
    assert len(reasons) > 3
    kept = {"epoch", "leader", "quorum-state", "check", "quorum", "BeginQuorumEpoch", "EndQuorumEpoch", "FetchSnapshot"}
    unsaid = sorted(r for r in reasons
                    if any(w not in kept and not w.isupper()
                           for w in re.findall(r"[A-Za-z][A-Za-z_-]{3,}", narration._raft_reason(r, True))))
    assert not unsaid
    assert narration._raft_reason("pre-vote lost (election timeout)", True) == "预投票失败（选举超时）"
