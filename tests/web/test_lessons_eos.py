"""Lessons 14 (idempotence and transactions) and 15 (the timing wheel) on the
``guided-cluster`` kind: the pages, the kind driven directly, and the WebSocket walking the
guided steps forwards and back and doing the try-its as a learner would (seed 003:
PID + sequence, read_committed / read_uncommitted, zombie fencing, delayed produce on the
timing wheel)."""
from __future__ import annotations

import asyncio

import pytest
from .framing import TrackedCommunicator
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.guided_cluster import GuidedClusterSandbox
from kafkaviz.live.kinds import Limits
from kafkaviz.live.validation import CommandError, validate_command

from .conftest import ORIGIN
from .test_lesson10 import command   # send one command, collect its reply and frames

L14, L15 = "idempotence-and-transactions", "timing-wheel"


@pytest.fixture
def lenient(runtime_settings):
    runtime_settings.update(COMMAND_BURST=1000, COMMANDS_PER_SECOND=1000.0)
    return runtime_settings


def make_kind(tmp_path, slug):
    return GuidedClusterSandbox(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=load_content(slug))


def leader_lane(state, p):
    part = state["partitions"][p]
    return next(r for r in part["replicas"] if r["leader"])


def values(lane):
    return [c["value"] for c in lane["cells"]]


def steps_to(kind, step_id):
    ids = [s.id for s in kind.lesson.steps]
    kind.seek(ids.index(step_id) + 1)
    return kind.state()


# ---- pages -------------------------------------------------------------------------------

def test_lesson_14_page_has_its_diagram_forms_and_quiz(client):
    html = client.get(f"/lessons/{L14}/").content.decode()
    for needle in ('data-diagram="txn-log"', 'data-diagram="step-timeline"', 'id="lose-answers-button"',
                   'id="create-producer-form"', 'id="commit-txn-button"', 'id="abort-txn-button"',
                   'name="isolation"', 'id="quiz-read-committed"', 'data-task="no-duplicate"', "js/txn-log.js"):
        assert needle in html, needle


def test_lesson_15_page_has_the_wheel_and_its_controls(client):
    html = client.get(f"/lessons/{L15}/").content.decode()
    for needle in ('data-diagram="timing-wheel"', 'id="tw-produce-form"', 'name="timeout_ms"', 'id="pause-button"',
                   'id="resume-button"', 'id="quiz-overflow"', 'data-task="cascade"', "js/timing-wheel.js"):
        assert needle in html, needle


def test_both_lessons_in_chinese_translate_the_text_and_the_diagram_words(client):
    html = client.get(f"/lessons/{L14}/?lang=zh").content.decode()
    for needle in ("幂等生产者与事务", "最后稳定偏移量", "丢失应答", "事务协调者的表", "协调者"):
        assert needle in html, needle
    html = client.get(f"/lessons/{L15}/?lang=zh").content.decode()
    for needle in ("时间轮", "溢出时间轮", "延迟队列", "超时（毫秒）"):
        assert needle in html, needle


def test_home_links_both_lessons(client):
    html = client.get("/").content.decode()
    assert f'href="/lessons/{L14}/"' in html and f'href="/lessons/{L15}/"' in html


# ---- lesson 14 on the kind -----------------------------------------------------------------

def test_retry_without_idempotence_is_written_twice_and_with_it_once(tmp_path):
    kind = make_kind(tmp_path, L14)
    st = steps_to(kind, "plain-retry")
    for lane in st["partitions"][0]["replicas"]:
        assert values(lane) == ["m1", "m1"]                  # on every replica lane
        assert {c["producer_id"] for c in lane["cells"]} == {-1}
        # The second copy is the one the retry of the first request wrote (from the engine's events).
        assert "retry_of" not in lane["cells"][0] and lane["cells"][1]["retry_of"] == 1
    st = steps_to(kind, "safe-retry")
    for lane in st["partitions"][0]["replicas"]:
        assert values(lane) == ["m1", "m1", "m2"]            # the retry of m2 wrote nothing
        m2 = lane["cells"][2]
        assert (m2["producer_id"], m2["producer_epoch"], m2["sequence"]) == (0, 0, 0)
        assert "retry_of" not in m2                           # the retry was answered, not written
    dup = [e for e in kind.step_events() if e["kind"] == "produce_duplicate"]
    assert dup and (dup[0]["base_offset"], dup[0]["last_offset"]) == (2, 2)
    kind.close()


def test_transactions_markers_lso_and_the_two_isolation_levels(tmp_path):
    kind = make_kind(tmp_path, L14)
    st = steps_to(kind, "read-open")
    p0 = st["partitions"][0]
    assert p0["last_stable_offset"] == 3 < p0["high_watermark"] == 4          # "a" at 3 is open
    assert leader_lane(st, 0)["cells"][3]["status"] == "open"
    assert [r["value"] for r in st["reads"]["read_uncommitted"]["records"]] == ["m1", "m1", "m2", "a"]
    assert [r["value"] for r in st["reads"]["read_committed"]["records"]] == ["m1", "m1", "m2"]
    st = steps_to(kind, "commit")
    for p, (data, marker) in ((0, (3, 4)), (1, (0, 1))):
        cells = leader_lane(st, p)["cells"]
        assert cells[data]["status"] == "committed" and cells[marker]["control"] == "COMMIT"
    st = steps_to(kind, "read-after-abort")
    for p in (0, 1):
        lane = leader_lane(st, p)
        assert lane["cells"][-1]["control"] == "ABORT" and lane["cells"][-2]["status"] == "aborted"
    p0 = st["partitions"][0]
    assert p0["aborted"] == [{"producer_id": 1, "first_offset": 5, "last_offset": 6}]
    names = [f["name"] for f in p0["files"]]
    assert any(n.endswith(".txnindex") for n in names) and any(n.endswith(".snapshot") for n in names)
    assert "c" in [r["value"] for r in st["reads"]["read_uncommitted"]["records"]]
    assert [r["value"] for r in st["reads"]["read_committed"]["records"]] == ["m1", "m1", "m2", "a"]
    assert st["reads"]["read_committed"]["skipped_aborted"] == [5]
    kind.close()


def test_zombie_instance_is_fenced_after_the_epoch_bump(tmp_path):
    kind = make_kind(tmp_path, L14)
    st = steps_to(kind, "zombie-fenced")
    prods = {p["name"]: p for p in st["producers"]}
    assert prods["tx2"]["producer_epoch"] == prods["tx"]["producer_epoch"] + 1
    assert prods["tx"]["txn_state"] == "fenced"
    assert st["transactions"][0]["producer_epoch"] == prods["tx2"]["producer_epoch"]
    assert "zombie" not in values(leader_lane(st, 0))
    kind.close()


def test_consume_transform_produce_commits_offsets_with_the_marker_and_an_abort_discards_them(tmp_path):
    kind = make_kind(tmp_path, L14)
    st = steps_to(kind, "ctp-send")
    (off,) = st["offsets_partitions"]
    assert off["partition"] == 0 and "__consumer_offsets-0" in next(
        t for t in st["transactions"] if t["transactional_id"] == "etl")["partitions"]
    lane = next(r for r in off["replicas"] if r["leader"])
    assert [(c["value"], c["status"]) for c in lane["cells"]] == [("t-0→3", "open")]
    (group,) = st["group_offsets"]
    assert group["committed"] == [] and group["pending"][0]["offsets"] == [["t", 0, 3]]
    st = steps_to(kind, "ctp-commit")
    lane = next(r for r in st["offsets_partitions"][0]["replicas"] if r["leader"])
    assert [(c["value"], c["status"]) for c in lane["cells"]] == [("t-0→3", "committed"), ("COMMIT", "marker")]
    assert st["group_offsets"][0]["committed"] == [["t", 0, 3]] and st["group_offsets"][0]["pending"] == []
    st = steps_to(kind, "ctp-abort")
    lane = next(r for r in st["offsets_partitions"][0]["replicas"] if r["leader"])
    assert [(c["value"], c["status"]) for c in lane["cells"]][2:] == [("t-0→5", "aborted"), ("ABORT", "marker")]
    assert st["group_offsets"][0]["committed"] == [["t", 0, 3]] and st["group_offsets"][0]["pending"] == []
    assert "X" not in [c["value"] for c in leader_lane(st, 1)["cells"] if c["status"] != "aborted"]
    kind.close()


def test_bad_transactional_call_is_refused_and_changes_nothing(tmp_path):
    kind = make_kind(tmp_path, L14)
    steps_to(kind, "txn-init")
    before = kind.state()
    spec = kind.commands["commit_transaction"]
    with pytest.raises(Exception) as err:
        run_spec(kind, spec, {"name": "tx"})                 # commit without begin
    assert type(err.value).__name__ == "InvalidTxnStateError"
    after = kind.state()
    assert {k: v for k, v in after.items() if k not in ("tasks", "run")} == \
        {k: v for k, v in before.items() if k not in ("tasks", "run")}
    with pytest.raises(CommandError):                      # a value outside the engine's choices
        validate_command(kind.commands, {"cmd": "consume", "partition": 0, "isolation": "read_sometimes"})
    kind.close()


def test_records_beyond_the_quota_are_refused_and_change_nothing(tmp_path):
    kind = GuidedClusterSandbox(tmp_path / "box", seed=1, limits=Limits(3, 10**8), lesson=load_content(L14))
    run_spec(kind, *validate_command(kind.commands, {"cmd": "produce", "partition": 0, "value": "a", "count": 3}))
    before = kind.state()
    with pytest.raises(CommandError) as err:
        run_spec(kind, *validate_command(kind.commands, {"cmd": "produce", "partition": 0, "value": "b"}))
    assert err.value.code == "quota"
    assert {k: v for k, v in kind.state().items() if k not in ("tasks", "run")} == \
        {k: v for k, v in before.items() if k not in ("tasks", "run")}
    kind.close()


def test_back_replays_to_exactly_the_earlier_state(tmp_path):
    kind = make_kind(tmp_path, L14)
    a = steps_to(kind, "abort-writes")
    steps_to(kind, "abort")
    kind.back()
    b = kind.state()
    assert {k: v for k, v in a.items() if k != "tasks"} == {k: v for k, v in b.items() if k != "tasks"}
    kind.close()


# ---- lesson 15 on the kind -----------------------------------------------------------------

def test_the_wheel_fills_overflows_cascades_and_times_out(tmp_path):
    kind = make_kind(tmp_path, L15)
    st = steps_to(kind, "one-waits")
    t, f = st["timers"]
    assert (t["purgatory"], f["purgatory"]) == ("produce", "fetch")
    assert [lv["tick_ms"] for lv in t["levels"]] == [1, 20, 400]     # overflow wheels made on demand
    assert [len(lv["buckets"]) for lv in t["levels"]] == [0, 0, 1] and t["pending"] == 1
    kinds = [e["kind"] for e in kind.step_events() if e["kind"].startswith("timer_") and e["timer"] == t["name"]]
    assert kinds.count("timer_overflow_wheel_created") == 2 and "timer_task_added" in kinds
    steps_to(kind, "completes")
    assert any(e["kind"] == "timer_task_cancelled" and e["timer"] == t["name"] for e in kind.step_events())
    assert kind.state()["timers"][0]["pending"] == 0
    start = steps_to(kind, "fine-expires")["clock_ms"]
    steps_to(kind, "cascade-once")                    # 250 ms with nothing due, then m3's bucket
    timer_times = [e["time_ms"] for e in kind.step_events() if e["kind"].startswith("timer_")]
    assert timer_times and min(timer_times) > start + 250                           # no empty ticks
    steps_to(kind, "cascade-from-top")
    casc = [e for e in kind.step_events() if e["kind"] == "timer_task_cascaded"]
    assert [(e["from_level"], e["to_level"]) for e in casc] == [(2, 1)]
    steps_to(kind, "times-out")
    evs = kind.step_events()
    assert [(e["from_level"], e["to_level"]) for e in evs if e["kind"] == "timer_task_cascaded"] == [(1, 0)]
    assert any(e["kind"] == "timer_task_expired" for e in evs)
    assert any(e["kind"] == "produce_failed" and e["error"] == "REQUEST_TIMED_OUT" for e in evs)
    kind.close()


def test_the_fetch_purgatory_holds_the_followers_fetches_until_they_expire(tmp_path):
    """Lesson 15's last steps: caught-up followers' fetches park on the fetch purgatory's own
    wheels (level 2: 500 ms is more than one turn of the 20 ms wheel), cascade down, expire at
    replica.fetch.wait.max.ms, are answered with no records, and the next fetch parks again."""
    kind = make_kind(tmp_path, L15)
    st = steps_to(kind, "catch-up")
    fetch = st["timers"][1]
    assert fetch["name"] == "broker-0.fetch" and fetch["pending"] == 2
    parked = [(lv["level"], [task[1] for b in lv["buckets"] for task in b["tasks"]]) for lv in fetch["levels"]]
    assert parked[2][0] == 2 and sorted(parked[2][1]) == ["fetch:fetch#1@5", "fetch:fetch#2@5"]
    st = steps_to(kind, "fetch-expires")
    evs = kind.step_events()
    on_fetch_wheel = [e for e in evs if e["kind"].startswith("timer_") and e["timer"] == "broker-0.fetch"]
    assert [(e["from_level"], e["to_level"]) for e in on_fetch_wheel if e["kind"] == "timer_task_cascaded"] == \
        [(2, 1), (2, 1), (1, 0), (1, 0)]
    expired = [e["name"] for e in on_fetch_wheel if e["kind"] == "timer_task_expired"]
    assert sorted(expired) == ["fetch:fetch#1@5", "fetch:fetch#2@5"]
    answers = [e for e in evs if e["kind"] == "fetch_answered"]
    assert [(a["records"], a["waited_ms"]) for a in answers] == [(0, 500), (0, 500)]
    assert st["timers"][1]["pending"] == 2                        # the next fetches parked again
    # The produce wheel saw none of it.
    assert not [e for e in evs if e["kind"].startswith("timer_") and e["timer"] == "broker-0.produce"]
    kind.close()


def test_fetches_leaving_their_wheel_do_not_pass_the_produce_try_its(tmp_path):
    """The try-its count the produce purgatory's wheel only: a learner who just lets time pass
    (fetches park, expire and complete on the fetch wheel) has not made a produce complete,
    cascade or time out."""
    kind = make_kind(tmp_path, L15)
    run_spec(kind, *validate_command(kind.commands, {"cmd": "advance", "ms": "2000"}))
    fetch_moves = [e for e in kind.step_events() if e["kind"] in ("timer_task_cancelled", "timer_task_expired",
                                                                   "timer_task_cascaded")]
    assert fetch_moves and all(e["timer"] == "broker-0.fetch" for e in fetch_moves)
    st = kind.state()
    assert not any(task_done(st, t) for t in ("complete", "cascade", "timeout"))
    run_spec(kind, *validate_command(kind.commands, {"cmd": "produce", "value": "own", "timeout_ms": "1000"}))
    run_spec(kind, *validate_command(kind.commands, {"cmd": "advance", "ms": "20"}))
    assert task_done(kind.state(), "complete")
    kind.close()


# ---- over the WebSocket --------------------------------------------------------------------

def headers_for(slug):
    response = Client().get(f"/lessons/{slug}/")
    assert response.status_code == 200
    cookie = response.cookies[django_settings.SESSION_COOKIE_NAME].value
    return [(b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]


async def connect(slug, headers):
    comm = TrackedCommunicator(application, f"/ws/lessons/{slug}/", headers=headers)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from(timeout=10)
    assert snapshot["type"] == "frame" and snapshot["kind"] == "guided-cluster"
    return comm, snapshot


def task_done(state, task_id):
    return next(t for t in state["tasks"] if t["id"] == task_id)["done"]


@pytest.mark.asyncio
async def test_ws_lesson_14_try_its_through_the_learners_commands(lenient, runtime):
    headers = await asyncio.to_thread(headers_for, L14)
    comm, snap = await connect(L14, headers)
    assert snap["state"]["run"]["total"] == 18
    for message in ({"cmd": "create_producer", "name": "me", "idempotent": "true"},
                    {"cmd": "cut_link", "a": "0", "b": "-1", "both": "false"},
                    {"cmd": "produce", "producer": "me", "partition": "0", "value": "once"},
                    {"cmd": "advance", "ms": "1500"},
                    {"cmd": "heal_link", "a": "0", "b": "-1", "both": "false"}):
        reply, frame = await command(comm, message)
        assert reply["type"] == "ack", reply
    assert not task_done(frame["state"], "no-duplicate")
    reply, frame = await command(comm, {"cmd": "advance", "ms": "1500"})
    assert task_done(frame["state"], "no-duplicate")
    assert values(leader_lane(frame["state"], 0)).count("once") == 1
    # A transaction of the learner's own, aborted, then read with read_committed.
    for message in ({"cmd": "create_producer", "name": "t1", "transactional_id": "mine"},
                    {"cmd": "init_transactions", "name": "t1"}, {"cmd": "advance", "ms": "500"},
                    {"cmd": "begin_transaction", "name": "t1"},
                    {"cmd": "produce", "producer": "t1", "partition": "0", "value": "gone"},
                    {"cmd": "advance", "ms": "500"}, {"cmd": "abort_transaction", "name": "t1"},
                    {"cmd": "advance", "ms": "500"},
                    {"cmd": "consume", "partition": "0", "offset": "0", "isolation": "read_committed"}):
        reply, frame = await command(comm, message)
        assert reply["type"] == "ack", reply
    st = frame["state"]
    assert task_done(st, "abort-read-committed")
    assert "gone" not in [r["value"] for r in st["reads"]["read_committed"]["records"]]
    # Commit without begin: Kafka's error, next to the form, and the sandbox stays.
    reply, _ = await command(comm, {"cmd": "commit_transaction", "name": "t1"})
    assert reply["type"] == "error" and "INVALID_TXN_STATE" in reply["message"]
    # Offsets in a transaction of one's own, aborted: the group's committed offset does not move.
    for message in ({"cmd": "begin_transaction", "name": "t1"},
                    {"cmd": "send_offsets_to_transaction", "name": "t1", "group": "mine", "topic": "t",
                     "partition": "0", "offset": "2"},
                    {"cmd": "advance", "ms": "500"}, {"cmd": "abort_transaction", "name": "t1"},
                    {"cmd": "advance", "ms": "500"}):
        reply, frame = await command(comm, message)
        assert reply["type"] == "ack", reply
    assert task_done(frame["state"], "ctp-abort-offsets")
    mine = next(g for g in frame["state"]["group_offsets"] if g["group"] == "mine")
    assert mine["committed"] == [] and mine["pending"] == []
    # Fencing: a second instance with the same transactional.id, then the old one writes.
    for message in ({"cmd": "create_producer", "name": "t2", "transactional_id": "mine"},
                    {"cmd": "init_transactions", "name": "t2"}, {"cmd": "advance", "ms": "500"},
                    {"cmd": "begin_transaction", "name": "t1"},
                    {"cmd": "produce", "producer": "t1", "partition": "1", "value": "z"},
                    {"cmd": "advance", "ms": "500"}):
        reply, frame = await command(comm, message)
        assert reply["type"] == "ack", reply
    assert task_done(frame["state"], "fence")
    await comm.disconnect()


@pytest.mark.asyncio
async def test_ws_lesson_15_steps_forward_and_back_and_a_timeout_of_ones_own(lenient, runtime):
    headers = await asyncio.to_thread(headers_for, L15)
    comm, snap = await connect(L15, headers)
    total = snap["state"]["run"]["total"]
    frames = [snap["state"]]
    for n in range(1, total + 1):
        reply, frame = await command(comm, {"cmd": "step"})
        assert reply["type"] == "ack" and frame["state"]["run"]["step"] == n
        frames.append(frame["state"])
    assert frames[1]["timers"][0]["levels"][2]["buckets"][0]["tasks"][0][1].endswith("#1")
    for n in range(total - 1, -1, -1):
        reply, frame = await command(comm, {"cmd": "back"})
        assert reply["type"] == "ack" and frame["state"]["run"]["step"] == n
        assert frame["state"]["timers"] == frames[n]["timers"]
    for message in ({"cmd": "pause_follower", "broker": "1"}, {"cmd": "pause_follower", "broker": "2"},
                    {"cmd": "produce", "value": "late", "timeout_ms": "500"}, {"cmd": "advance", "ms": "700"}):
        reply, frame = await command(comm, message)
        assert reply["type"] == "ack", reply
    st = frame["state"]
    assert task_done(st, "timeout") and task_done(st, "cascade") and not task_done(st, "complete")
    await comm.disconnect()


def test_an_exported_run_with_own_commands_replays_to_the_same_state(tmp_path):
    kind = make_kind(tmp_path / "a", L14)
    steps_to(kind, "txn-init")
    run_spec(kind, *validate_command(kind.commands, {"cmd": "begin_transaction", "name": "tx"}))
    run_spec(kind, *validate_command(kind.commands, {"cmd": "produce", "producer": "tx", "partition": 1, "value": "q"}))
    run_spec(kind, *validate_command(kind.commands, {"cmd": "advance", "ms": 500}))
    exported = kind.export_run()
    other = make_kind(tmp_path / "b", L14)
    other.import_run(exported)
    assert {k: v for k, v in other.state().items() if k != "tasks"} == \
        {k: v for k, v in kind.state().items() if k != "tasks"}
    kind.close()
    other.close()
