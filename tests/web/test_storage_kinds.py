"""The storage lessons' sandbox kinds (1, 3, 4, 5, 7) driven directly, as the runtime's worker
thread would: each test checks a seed fact against what the engine did, and that bad input is
refused with a message while the sandbox keeps working."""
from __future__ import annotations

import json

import pytest

from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.kinds import Limits, get_kind
from kafkaviz.live.validation import CommandError, validate_command

SLUG = {"topic": "topics-partitions-offsets", "inside-segment": "offset-index", "retention": "retention",
        "page-cache": "flush-and-page-cache"}


def make(name, tmp_path, seed=3, max_messages=5000, slug=None):
    lesson = load_content(slug or SLUG[name])
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    return get_kind(name)(d, seed=seed, limits=Limits(max_messages, 50_000_000), lesson=lesson)


def run(kind, message):
    spec, values = validate_command(kind.commands, message)
    return run_spec(kind, spec, values)


# ---- lesson 1: topics, partitions, offsets --------------------------------------------
def test_lesson1_same_key_same_partition_and_offsets_count_from_zero(tmp_path):
    """Seed 001 ordering + seed-claims #113: keyed records go to murmur2(key) % partitions."""
    k = make("topic", tmp_path)
    run(k, {"cmd": "produce", "count": "6", "key_mode": "fixed", "key": "user-1"})
    parts = [p for p in k.state()["partitions"] if p["records"]]
    assert len(parts) == 1 and [r[0] for r in parts[0]["records"]] == list(range(6))
    assert k.state()["tasks"][0] == {"id": "same-key", "done": True, "progress": ""}


def test_lesson1_keyless_records_stick_then_switch_kip480(tmp_path):
    """Seed 001 says keyless records go round-robin one by one; since Kafka 2.4 (KIP-480) a
    whole batch fills one partition first."""
    k = make("topic", tmp_path)
    run(k, {"cmd": "produce", "count": "20", "key_mode": "none"})
    placements = k.state()["placements"]
    runs = []
    for pl in placements:
        if not runs or runs[-1][0] != pl["partition"]:
            runs.append([pl["partition"], 0])
        runs[-1][1] += 1
    assert len(runs) >= 2 and all(n >= 4 for _, n in runs[:-1])
    assert k.state()["tasks"][1]["done"]


def test_lesson1_two_consumers_order_per_partition_only(tmp_path):
    """Seed 001: order is guaranteed only within a partition."""
    k = make("topic", tmp_path)
    run(k, {"cmd": "produce", "count": "12", "key_mode": "cycle"})
    run(k, {"cmd": "produce", "count": "12", "key_mode": "none"})
    for _ in range(12):
        run(k, {"cmd": "poll", "consumer": "A", "max_records": "3"})
        run(k, {"cmd": "poll", "consumer": "B", "max_records": "3"})
    st = k.state()
    assert st["orders_differ"] and st["tasks"][2]["done"]
    a, b = st["consumers"]
    for p in range(3):
        assert [r for r in a["received"] if r[0] == p] == [r for r in b["received"] if r[0] == p]


def test_lesson1_bad_input_is_refused_and_changes_nothing(tmp_path):
    k = make("topic", tmp_path)
    with pytest.raises(CommandError) as e:
        run(k, {"cmd": "produce", "count": "5", "key_mode": "fixed", "key": ""})
    assert e.value.field == "key"
    with pytest.raises(CommandError):
        run(k, {"cmd": "poll", "consumer": "C"})
    with pytest.raises(CommandError):
        run(k, {"cmd": "produce", "count": "500"})
    assert k.messages_sent == 0


# ---- lessons 3 and 4: inside a segment --------------------------------------------------
def test_lesson3_offset_lookup_picks_segment_probes_index_then_scans(tmp_path):
    """Seed 000 §1.2's six steps; seed 001 lookup #1-#3: floor by file name, binary search in the
    sparse .index (largest entry <= target), then scan the .log from that position."""
    k = make("inside-segment", tmp_path)
    run(k, {"cmd": "produce", "count": "40", "value_size": "100"})
    run(k, {"cmd": "lookup_offset", "offset": "19"})
    st = k.state()
    lk = st["lookup"]
    assert lk["mode"] == "offset" and lk["segment"] == max(b for b in lk["candidates"] if b <= 19)
    entries = st["layout"]["offset_index"]
    floor = max((e for e in entries if e[1] <= 19), key=lambda e: e[1])
    assert lk["probes"][-1][3] <= 19 and any(p[3] == floor[1] for p in lk["probes"])
    assert lk["scan"][0][0] == floor[2]                # the scan starts where the entry points
    assert lk["scan"][-1][4] and lk["scan"][-1][1] <= 19 <= lk["scan"][-1][2]
    assert st["layout"]["files"]["log"] == f"{lk['segment']:020d}.log"
    # sparse (seed-claims #7: seed 000's figure shows an entry per message; Kafka's index is sparse)
    assert len(entries) < len(st["layout"]["batches"])


def test_lesson3_index_interval_changes_density_of_new_entries(tmp_path):
    """Seed 001 seg #6: one entry per index.interval.bytes of messages."""
    k = make("inside-segment", tmp_path)
    run(k, {"cmd": "set_index_interval", "bytes": "4096"})
    run(k, {"cmd": "produce", "count": "12", "value_size": "100"})
    sparse = len(k.state()["layout"]["offset_index"])
    k2 = make("inside-segment", tmp_path / "b")
    run(k2, {"cmd": "set_index_interval", "bytes": "64"})
    run(k2, {"cmd": "produce", "count": "12", "value_size": "100"})
    dense = len(k2.state()["layout"]["offset_index"])
    assert sparse == 0 and dense >= 10
    assert k2.state()["tasks"][2]["done"]
    with pytest.raises(CommandError):
        run(k2, {"cmd": "set_index_interval", "bytes": "100"})   # not one of the offered values


def test_lesson4_time_lookup_four_steps_between_entries_and_past_the_end(tmp_path):
    """Seed 002 §1.2's four steps; seed-claims #32: step 2 takes the largest entry <= target
    (the seed says >=); #34: every record has a timestamp, so the answer is exact."""
    k = make("inside-segment", tmp_path, slug="time-index")
    run(k, {"cmd": "produce", "count": "30", "value_size": "100"})
    run(k, {"cmd": "select_segment", "segment": "0"})
    ti = k.state()["layout"]["time_index"]
    target = ti[1][0] + 50                                  # between entries 1 and 2
    run(k, {"cmd": "lookup_time", "timestamp": str(target)})
    lk = k.state()["lookup"]
    assert lk["mode"] == "timestamp" and lk["time_probes"]
    assert all(p[3] != target for p in lk["time_probes"])
    assert lk["timestamp"] >= target and lk["offset"] == next(
        b[1] for b in k.state()["layout"]["batches"] if b[3] >= target)
    tasks = {t["id"]: t["done"] for t in k.state()["tasks"]}
    assert tasks["time-between"]
    text = run(k, {"cmd": "lookup_time", "timestamp": str(10**9)})
    assert "-1" in text and k.state()["lookup"]["offset"] == -1
    assert {t["id"]: t["done"] for t in k.state()["tasks"]}["time-past-end"]


def test_lesson3_lookup_outside_the_log_is_a_clear_error(tmp_path):
    k = make("inside-segment", tmp_path)
    with pytest.raises(CommandError, match="empty"):
        run(k, {"cmd": "lookup_offset", "offset": "0"})
    run(k, {"cmd": "produce", "count": "3", "value_size": "100"})
    with pytest.raises(CommandError, match="0–2"):
        run(k, {"cmd": "lookup_offset", "offset": "7"})
    with pytest.raises(CommandError):
        run(k, {"cmd": "produce", "count": "1", "value_size": "5000"})


# ---- lesson 5: retention ------------------------------------------------------------------
def test_lesson5_three_rules_active_segment_kept_deleted_then_gone(tmp_path):
    """Seed 000 §1.3/§1.4 and seed 002 §1.3: whole segments go by size and by time; the log start
    offset (DeleteRecords) removes segments below it; .deleted first, removed after the delay;
    the active segment is never deleted."""
    k = make("retention", tmp_path)
    run(k, {"cmd": "produce", "count": "20", "value_size": "100"})
    run(k, {"cmd": "advance", "ms": "5000"})
    deleted = lambda: [e.reason for e in k.events.of_kind("segment_deleted")]  # noqa: E731
    assert deleted() == ["retention:size"]
    assert any(f["deleted"] for f in k.state()["partitions"][0]["files"])
    run(k, {"cmd": "delete_records", "offset": "14"})
    run(k, {"cmd": "advance", "ms": "5000"})
    assert deleted().count("retention:log_start_offset") == 1
    run(k, {"cmd": "advance", "ms": "70000"})
    st = k.state()
    assert deleted().count("retention:time") >= 1
    assert len(st["partitions"][0]["segments"]) == 1 and st["partitions"][0]["active_segment"] == st["partitions"][0]["log_end_offset"]
    assert not any(f["deleted"] for f in st["partitions"][0]["files"])
    assert all(t["done"] for t in st["tasks"])
    # the chart's history: size never above retention.bytes after a check, bounded length
    assert len(st["history"]) <= 600 and st["history"][0][1] == 0


def test_lesson5_delete_records_bounds(tmp_path):
    k = make("retention", tmp_path)
    run(k, {"cmd": "produce", "count": "5", "value_size": "100"})
    with pytest.raises(Exception, match="high watermark"):
        run(k, {"cmd": "delete_records", "offset": "9"})
    run(k, {"cmd": "delete_records", "offset": "3"})
    with pytest.raises(CommandError, match="forward"):
        run(k, {"cmd": "delete_records", "offset": "1"})
    assert k.state()["partitions"][0]["log_start_offset"] == 3


def test_lesson5_history_is_bounded(tmp_path):
    k = make("retention", tmp_path)
    for _ in range(10):
        run(k, {"cmd": "produce", "count": "40", "value_size": "50"})
        run(k, {"cmd": "advance", "ms": "60000"})
    assert len(k.history) <= 600
    assert len(json.dumps(k.state())) < 60_000


# ---- lesson 7: flush, page cache, crash -------------------------------------------------
def test_lesson7_power_loss_loses_unflushed_and_recovery_cuts_the_torn_batch(tmp_path):
    """Seed 001 flush: Kafka leaves flushing to the OS (flush.messages/flush.ms default to never);
    a power loss loses what was not fsync'd; recovery keeps every whole batch before the damage."""
    k = make("page-cache", tmp_path)
    run(k, {"cmd": "produce", "count": "12", "value_size": "300"})
    run(k, {"cmd": "writeback"})
    run(k, {"cmd": "crash", "power_loss": "true"})
    with pytest.raises(CommandError, match="down"):
        run(k, {"cmd": "produce", "count": "1", "value_size": "10"})
    run(k, {"cmd": "restart"})
    st = k.state()
    assert st["crashes"][-1]["lost_records"] >= 1 and st["crashes"][-1]["recovery_cut"]["to"] < 4096
    assert st["log"]["log_end_offset"] < 12
    done = {t["id"]: t["done"] for t in st["tasks"]}
    assert done["lose-unflushed"] and done["torn-batch"]


def test_lesson7_flush_messages_one_loses_nothing_and_fetch_names_the_sendfile_range(tmp_path):
    k = make("page-cache", tmp_path)
    run(k, {"cmd": "set_flush", "flush_messages": "1", "flush_ms": "0"})
    run(k, {"cmd": "produce", "count": "5", "value_size": "200"})
    assert all(f["durable"] == f["size"] for f in k.state()["files"] if f["name"].endswith(".log"))
    run(k, {"cmd": "fetch", "offset": "2"})
    fetch = k.state()["fetch"]
    batches = k.state()["log"]["batches"]
    assert fetch["position"] == batches[2][0] and fetch["length"] == sum(b[3] for b in batches[2:])
    run(k, {"cmd": "crash", "power_loss": "true"})
    run(k, {"cmd": "restart"})
    assert k.state()["crashes"][-1]["lost_records"] == 0
    with pytest.raises(CommandError):
        run(k, {"cmd": "set_flush", "flush_messages": "3", "flush_ms": "0"})


# ---- every storage lesson's guided steps, forwards and back -------------------------------
@pytest.mark.parametrize("slug", ["topics-partitions-offsets", "offset-index", "time-index", "retention",
                                  "flush-and-page-cache"])
def test_guided_steps_run_to_the_end_and_back_to_the_same_states(slug, tmp_path):
    lesson = load_content(slug)
    d = tmp_path / slug
    d.mkdir()
    kind = get_kind(lesson.kind)(d, seed=7, limits=Limits(5000, 50_000_000), lesson=lesson)
    states = [json.loads(json.dumps(kind.kind_state()))]
    for i in range(len(lesson.steps)):
        run(kind, {"cmd": "step"})
        states.append(json.loads(json.dumps(kind.kind_state())))
    with pytest.raises(CommandError):
        run(kind, {"cmd": "step"})
    for i in range(len(lesson.steps) - 1, -1, -1):
        run(kind, {"cmd": "back"})
        assert json.loads(json.dumps(kind.kind_state())) == states[i], f"step {i} after going back"
    run(kind, {"cmd": "seek", "step": str(len(lesson.steps))})
    assert json.loads(json.dumps(kind.kind_state())) == states[-1]
    kind.close()


# ---- what each guided step's words claim, checked against the engine after that step -------
def _walk(slug, tmp_path):
    lesson = load_content(slug)
    d = tmp_path / slug
    d.mkdir()
    kind = get_kind(lesson.kind)(d, seed=7, limits=Limits(5000, 50_000_000), lesson=lesson)
    ids = [s.id for s in lesson.steps]

    def at(step_id):
        run(kind, {"cmd": "seek", "step": str(ids.index(step_id) + 1)})
        return kind.kind_state()
    return kind, at


def test_lesson3_step_claims(tmp_path):
    kind, at = _walk("offset-index", tmp_path)
    st = at("fill")
    assert len(st["layout"]["batches"]) == 14 and {b[4] for b in st["layout"]["batches"]} == {170}
    assert [e[1] for e in st["layout"]["offset_index"]] == [2, 4, 6, 8, 10, 12]        # every second batch
    st = at("roll")
    assert st["partitions"][0]["segments"] == [0, 14]
    assert st["layout"]["offset_index"][0] == [2, 16, 340]                              # '2 → 340' = offset 16
    lk = at("lookup-19")["lookup"]
    assert lk["segment"] == 14 and lk["offset"] == 19 and len(lk["scan"]) == 2
    lk = at("lookup-5")["lookup"]
    assert lk["segment"] == 0 and lk["probes"][-1][3] == 4 and len(lk["scan"]) == 2      # entry for 4, one batch further
    st = at("denser")
    assert st["index_interval_bytes"] == 64
    lk = at("lookup-dense")["lookup"]
    assert lk["offset"] == 29 and len(lk["scan"]) == 1


def test_lesson4_step_claims(tmp_path):
    kind, at = _walk("time-index", tmp_path)
    at("fill")
    lk = at("between")["lookup"]
    assert lk["segment"] == 14 and lk["offset"] == 18 and lk["timestamp"] == 1900
    assert max(p[3] for p in lk["time_probes"] if p[5] != "left") < 1850                 # the floor, not the ceiling
    lk = at("exact")["lookup"]
    assert lk["time_probes"][-1][5] == "hit" and lk["offset"] == 6
    lk = at("before-all")["lookup"]
    assert lk["segment"] == 0 and lk["offset"] == 0
    assert all(p[5] == "left" for p in lk["time_probes"] + lk["probes"]) and lk["scan"][0][0] == 0
    lk = at("past-end")["lookup"]
    assert lk["segment"] is None and lk["offset"] == -1


def test_lesson5_step_claims(tmp_path):
    kind, at = _walk("retention", tmp_path)
    p = at("fill")["partitions"][0]
    assert p["segments"] == [0, 5, 10, 15] and p["size_bytes"] == 3400
    p = at("size-check")["partitions"][0]
    assert p["segments"] == [5, 10, 15] and any(f["name"] == "00000000000000000000.log.deleted" for f in p["files"])
    p = at("delete-records")["partitions"][0]
    assert p["log_start_offset"] == 12 and p["segments"] == [5, 10, 15]
    p = at("start-check")["partitions"][0]
    assert p["segments"] == [10, 15]
    p = at("files-gone")["partitions"][0]
    assert not any(f["deleted"] for f in p["files"])
    p = at("all-expire")["partitions"][0]
    assert p["segments"] == [20] and p["log_start_offset"] == 20


def test_lesson7_step_claims(tmp_path):
    kind, at = _walk("flush-and-page-cache", tmp_path)
    st = at("append")
    log_file = next(f for f in st["files"] if f["name"].endswith(".log"))
    assert log_file["durable"] == 0 and log_file["size"] == 12 * 370
    assert not at("power-loss")["alive"]
    st = at("recover-empty")
    assert st["log"]["log_end_offset"] == 0 and st["crashes"][-1]["lost_records"] == 12
    st = at("writeback")
    log_file = next(f for f in st["files"] if f["name"].endswith(".log"))
    assert log_file["durable"] == 4096
    cut = at("torn")["crashes"][-1]["recovery_cut"]
    assert (cut["segment"], cut["from"], cut["to"]) == (0, 4096, 11 * 370)
    assert at("flush-every")["crashes"][-1]["lost_records"] == 0
    st = at("kill")
    assert st["crashes"][-1]["power_loss"] is False and st["crashes"][-1]["lost_records"] == 0
    st = at("fetch")
    assert st["fetch"]["position"] == st["log"]["batches"][3][0]


def test_lesson1_step_claims(tmp_path):
    kind, at = _walk("topics-partitions-offsets", tmp_path)
    st = at("keyed")
    holding = [p for p in st["partitions"] if p["records"]]
    assert len(holding) == 1 and [r[0] for r in holding[0]["records"]] == list(range(6))
    st = at("keyless")
    rules = [pl["rule"] for pl in st["placements"] if pl["key"] is None]
    assert "sticky-switch" in rules
    st = at("consume-b")
    assert st["orders_differ"]


def test_lookup_steps_are_worded_from_the_event_in_both_languages(tmp_path):
    """engine/narration.lookup_steps: one step per thing the engine did, in the engine's order."""
    from engine.narration import lookup_steps
    kind, at = _walk("time-index", tmp_path)
    at("fill")
    lk = at("between")["lookup"]
    en, zh = lookup_steps(lk, "en"), lookup_steps(lk, "zh")
    kinds = [s["kind"] for s in en]
    assert kinds == (["segment"] + ["tprobe"] * len(lk["time_probes"]) + ["tfloor"] + ["probe"] * len(lk["probes"])
                     + ["scan"] * len(lk["scan"]) + ["answer"])
    assert [s["kind"] for s in zh] == kinds
    assert "gives offset 16 to start from" in en[len(lk["time_probes"]) + 1]["text"]
    assert en[-1]["text"] == "Answer: offset 18 (timestamp 1900), read from position 680 of 00000000000000000014.log."
    assert zh[-1]["text"].startswith("答案：偏移量 18")


def test_a_run_exported_before_the_switch_still_opens(tmp_path):
    """Share links and files made when the storage lessons said {"type": "advance", "seconds": 5}."""
    k = make("retention", tmp_path)
    old = {"log": [{"id": None, "do": [{"type": "produce", "count": 20, "value_size": 100}], "scripted": False},
                   {"id": None, "do": [{"type": "advance", "seconds": 5}], "scripted": False}], "step": 2}
    k.import_run(old)
    assert k.position == 2 and k.clock.now_ms() == 20 * 100 + 5000
    assert k.export_run()["log"][1]["do"] == [{"cmd": "advance", "ms": 5000}]
