"""Lesson 17, the controller quorum: its predictions are answered by the engine's events, its
picture's facts (controllers, the metadata log, each node's applied offset) come from the
engine, and its tasks are done by the steps that teach them -- in both languages."""
from __future__ import annotations

import pytest

from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import ReplicationSandbox

SLUG, SCENARIO = "controller-quorum", "controller-quorum"
# step -> the choice that must be the only one to happen (the engine decides, not the file)
RIGHT = {2: 1, 5: 0, 7: 2, 8: 1, 10: 0, 17: 1}


def _kind(tmp_path, lang="en"):
    kind = ReplicationSandbox(tmp_path / "box", seed=1, limits=Limits(1000, 10**8),
                              lesson=load_content(SLUG, lang), lang=lang)
    kind.load(SCENARIO, "epoch")
    return kind


def test_the_lesson_asks_before_the_steps_that_teach_and_zh_keeps_the_checks():
    en, zh = load_content(SLUG), load_content(SLUG, "zh")
    assert en.number == 17 and zh.title != en.title
    assert set(en.predictions) == {f"{SCENARIO}:{n}" for n in RIGHT}
    for key, p in en.predictions.items():
        assert zh.predictions[key].checks == p.checks and zh.predictions[key].question != p.question


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """Every step once: the prediction outcome and the quorum picture after it."""
    kind = _kind(tmp_path_factory.mktemp("l17"))
    out = {0: {"quorum": kind.state()["quorum"]}}
    for n in range(1, kind.total_steps + 1):
        kind.step()
        st = kind.state()
        out[n] = {"prediction": st.get("prediction"), "quorum": st["quorum"], "tasks": st.get("tasks"),
                  "brokers": st["brokers"], "partition": st["partition"]}
    kind.close()
    return out


@pytest.mark.parametrize("n, right", sorted(RIGHT.items()))
def test_the_engine_marks_exactly_the_choice_that_happened(walked, n, right):
    out = walked[n]["prediction"]["outcome"]
    assert out["step"] == n
    assert [i for i, c in enumerate(out["choices"]) if c["happened"]] == [right]
    assert out["evidence"]                   # step 10's absence of leader_elected comes with 100's unanswered votes


def test_the_quorum_is_elected_before_step_one(walked):
    q = walked[0]["quorum"]
    assert q["mode"] == "dedicated" and q["voters"] == [100, 101, 102]
    assert q["active"] == 101 and q["epoch"] == 1
    assert [c["state"] for c in q["controllers"]] == ["follower", "leader", "follower"]


def test_a_topic_travels_as_records_into_the_log_and_out_to_the_brokers(walked):
    after_create, after_fetch = walked[1]["quorum"], walked[2]["quorum"]
    types = [r["type"] for r in after_create["log"]["records"]]
    assert types[-3:] == ["TopicRecord", "ConfigRecord", "PartitionRecord"]
    end = after_create["log"]["end"]
    # the brokers had not applied them in the step that appended them; one step later they have
    assert all(after_create["applied"][str(b)] < end for b in (0, 1, 2))
    assert all(after_fetch["applied"][str(b)] >= end for b in (0, 1, 2))
    assert walked[2]["partition"]["leader"] == 0
    # The picture's crown follows what the broker applied: not yet in step 1, in step 2.
    assert not any(b["leader"] for b in walked[1]["brokers"])
    assert [b["id"] for b in walked[2]["brokers"] if b["leader"]] == [0]


def test_the_active_controller_dies_and_a_higher_epoch_takes_over(walked):
    q = walked[5]["quorum"]
    assert q["active"] == 100 and q["epoch"] == 2
    assert [r["type"] for r in q["log"]["records"]][-1] == "LeaderChangeMessage"
    assert {str(b): q["applied"][str(b)] for b in (0, 1, 2)} == {str(b): q["high_watermark"] for b in (0, 1, 2)}


def test_a_majority_down_freezes_metadata_while_data_flows(walked):
    for n in (7, 8, 9, 10):
        assert walked[n]["quorum"]["active"] is None, n
    hw = walked[7]["quorum"]["high_watermark"]
    assert walked[10]["quorum"]["high_watermark"] == hw          # nothing committed while frozen
    assert walked[10]["partition"]["leader"] == 0                # the dead leader is not replaced
    assert not next(b for b in walked[10]["brokers"] if b["id"] == 0)["alive"]
    assert walked[12]["quorum"]["active"] == 100 and walked[12]["quorum"]["epoch"] == 3
    assert walked[12]["partition"]["leader"] == 1


def test_at_the_end_every_node_applied_the_same_log_and_the_tasks_are_done(walked):
    last = walked[max(walked)]
    q = last["quorum"]
    assert set(q["applied"].values()) == {q["high_watermark"]}
    assert all(c["alive"] for c in q["controllers"])
    assert all(t["done"] for t in last["tasks"])


def test_the_chinese_lesson_plays_with_chinese_narration(tmp_path):
    kind = _kind(tmp_path, "zh")
    kind.step()
    kind.step()
    st = kind.state()
    assert "已应用位置" in st["run"]["steps"][1]["say"]
    assert st["prediction"]["outcome"]["step"] == 2
    kind.close()


def test_a_snapshot_moves_the_log_start_and_the_laggards_catch_up_with_fetch_snapshot(walked):
    before, after = walked[13]["quorum"]["log"], walked[14]["quorum"]["log"]
    assert before["start"] == 0 and "00000000000000000000-0000000000.checkpoint" in before["snapshots"]
    # The snapshot step: the cleaner moved the leader's log start to its snapshot, the bootstrap one went.
    assert after["start"] == 16 and after["snapshots"] == ["00000000000000000016-0000000003.checkpoint"]
    assert all(r["offset"] >= 16 for r in after["records"])
    q = walked[18]["quorum"]
    assert set(q["applied"].values()) == {q["high_watermark"]}
