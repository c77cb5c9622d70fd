"""Lessons 12 and 13 on the ``replication`` kind: the consumer-group view follows the engine's
group (owners, generation, idle members, committed offsets and lag), the learner's own
consumers join like the group's members, the lag chart's series and the deliveries strip show
duplicates after a crash (at-least-once) and skipped records (at-most-once), and the three
assignors give different owners for the same group. Also over the WebSocket."""
from __future__ import annotations

import pytest

from engine.errors import KafkaError
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import ReplicationSandbox
from kafkaviz.live.validation import validate_command

from .test_consumers import replies_until
from .test_storage_lessons_ws import last_state, open_lesson

GROUPS = load_content("consumer-groups")
COMMITS = load_content("committing-offsets")


def make_kind(tmp_path, lesson):
    return ReplicationSandbox(tmp_path / "box", seed=7, limits=Limits(100, 10**7), lesson=lesson)


def send(kind, message):
    spec, values = validate_command(kind.command_specs(kind.scenario), message)
    return run_spec(kind, spec, values)


def step_to(kind, n):
    while kind.run.position < n:
        kind.step()


def step_until(kind, text):
    """Step until the step's label/narration mentions ``text`` is done (returns the step number)."""
    while kind.run.position < len(kind.run.log):
        kind.step()
        cmd = kind.run.log[kind.run.position - 1]
        if text(cmd):
            return kind.run.position
    raise AssertionError("never reached")


def owners(state):
    return [p["owner"] for p in state["group"]["partitions"]]


def test_the_three_assignors_give_their_own_answers_for_the_same_group(tmp_path):
    """Seed 003 (assignors): range gives the first (partitions mod consumers) members one extra."""
    seen = {}
    kind = make_kind(tmp_path, GROUPS)
    for name in GROUPS.scenario["choices"]:
        kind.load(name, "epoch")
        # after c2 joined and the rebalance finished (step 6: advance after c2's join)
        step_to(kind, 9)
        st = kind.kind_state()
        assert st["group"]["generation"] == 2 and st["group"]["state"] == "Stable"
        seen[name] = owners(st)
    assert seen["group-range"] == ["c1", "c1", "c2"]          # the first (3 mod 2) member gets one extra
    assert seen["group-roundrobin"] == ["c1", "c2", "c1"]     # dealt out in turn
    kind.close()


def test_more_consumers_than_partitions_leaves_one_idle_and_no_partition_is_shared(tmp_path):
    """Seed 001 (consumer groups) and 003 Q15: each partition goes to one member; extra members sit idle."""
    kind = make_kind(tmp_path, GROUPS)
    step_until(kind, lambda c: c.get("cmd") == "consumer_join" and c.get("name") == "c4")
    kind.step()
    g = kind.kind_state()["group"]
    owned = [p for c in g["consumers"] for p in c["owned"]]
    assert sorted(owned) == [0, 1, 2]                          # every partition once, none twice
    idle = [c["name"] for c in g["consumers"] if c["alive"] and not c["owned"]]
    assert len(idle) == 1 and len(g["consumers"]) == 4
    assert any("REBALANCE_IN_PROGRESS" in s["text"] or "JoinGroup" in s["text"] for s in kind.kind_state()["protocol"])
    kind.close()


def test_a_learners_consumer_joins_like_the_group_and_a_crash_is_removed_after_the_session(tmp_path):
    kind = make_kind(tmp_path, GROUPS)
    kind.load("group-roundrobin", "epoch")
    step_to(kind, 9)
    send(kind, {"cmd": "consumer_join", "name": "c9", "group": "billing", "session_timeout_ms": "6000",
                "heartbeat_interval_ms": "1000"})
    send(kind, {"cmd": "advance", "ms": "3000"})
    g = kind.kind_state()["group"]
    assert g["protocol"] == "roundrobin" and g["generation"] == 3
    assert {c["name"] for c in g["consumers"] if c["owned"]} == {"c1", "c2", "c9"}
    send(kind, {"cmd": "consumer_crash", "name": "c9"})
    send(kind, {"cmd": "advance", "ms": "7000"})
    g = kind.kind_state()["group"]
    assert g["generation"] == 4 and set(owners(kind.kind_state())) == {"c1", "c2"}   # all owned, c9 gone
    with pytest.raises(KafkaError, match="not running"):     # the engine refuses (the runtime words it)
        send(kind, {"cmd": "consumer_crash", "name": "c9"})
    kind.close()


@pytest.mark.parametrize("scenario, resumes, twice", [
    ("commit-after-processing", 10, list(range(10, 15))),
    ("commit-before-processing", 15, []),
    ("auto-commit", 10, list(range(10, 15))),
])
def test_where_the_group_resumes_after_a_crash(tmp_path, scenario, resumes, twice):
    """Seed 003 Q11: the committed offset is the next to read; a crash between processing and
    commit gives duplicates (at-least-once) or losses (at-most-once)."""
    kind = make_kind(tmp_path, COMMITS)
    kind.load(scenario, "epoch")
    step_to(kind, len(kind.run.log))
    st = kind.kind_state()
    texts = [s["text"] for s in st["protocol"]]
    assert any("c1" in t for t in texts)
    resets = [e for e in kind.run.cluster.events.envelopes if e.event.kind == "position_reset"]
    assert resets[-1].event.offset == resumes and resets[-1].event.source == "committed"
    counts = dict(map(tuple, st["deliveries"][0]["counts"]))
    assert [o for o, n in sorted(counts.items()) if n == 2] == twice
    p0 = st["group"]["partitions"][0]
    assert p0["committed"] == 15 and p0["high_watermark"] == 15 and p0["lag"] == 0
    series = st["lag_series"][0]["points"]
    assert series[-1][1:] == [15, 15, 0]
    assert max(pt[3] for pt in series if pt[3] is not None) >= 5   # lag grew before the commits caught up
    assert series[0][2] is None and series[0][3] is None            # no lag before the first commit
    kind.close()


@pytest.mark.asyncio
@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["consumer-groups", "committing-offsets"])
async def test_group_lessons_over_the_websocket(slug, runtime):
    comm, first = await open_lesson(slug)
    assert "group" in first["state"] and first["state"]["group"] is None      # nothing joined at step 0
    got = []
    step = 0
    while not (got and last_state(got).get("group")):     # step until c1 has joined
        await comm.send_json_to({"cmd": "step"})
        step += 1
        got += await replies_until(comm, lambda m: m["type"] == "frame" and m["state"]["run"]["step"] == step)
    await comm.send_json_to({"cmd": "advance", "ms": 2000})
    got += await replies_until(comm, lambda m: m["type"] == "frame" and m["state"]["run"]["step"] == step + 1)
    g = last_state(got)["group"]
    assert g["state"] == "Stable", g
    assert g["group"] == "billing" and g["consumers"][0]["name"] == "c1" and g["partitions"][0]["owner"] == "c1"
    await comm.send_json_to({"cmd": "consumer_crash", "name": "nobody"})
    err = (await replies_until(comm, lambda m: m["type"] == "error"))[-1]
    assert err["code"] == "engine" and "nobody" in err["message"]
    await comm.send_json_to({"cmd": "consumer_poll", "name": "c1"})      # the connection still works
    ack = (await replies_until(comm, lambda m: m["type"] in ("ack", "error")))[-1]
    assert ack["type"] == "ack"
    await comm.disconnect()
