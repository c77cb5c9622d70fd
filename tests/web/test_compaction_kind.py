"""The ``compaction`` kind (lesson 6): the guided steps compact as Kafka's cleaner does (latest
value per key, offsets keep their gaps, a tombstone kept through delete.retention.ms and then
removed), the state carries the segments before the last pass and its offset map and is rebuilt
exactly by stepping back, a keyless record is refused by the engine with nothing appended, and
the same over the WebSocket with bad input keeping the connection."""
from __future__ import annotations

import pytest

from engine.errors import KafkaError
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.storage_kinds import CompactionSandbox
from kafkaviz.live.kinds import Limits
from kafkaviz.live.validation import CommandError, validate_command

from .test_consumers import replies_until
from .test_storage_lessons_ws import last_state, open_lesson

LESSON = load_content("compaction")


def make_kind(tmp_path):
    return CompactionSandbox(tmp_path / "box", seed=3, limits=Limits(100, 10**7), lesson=LESSON)


def send(kind, message):
    spec, values = validate_command(kind.command_specs(kind.scenario), message)
    return run_spec(kind, spec, values)


def records(state):
    return [r for s in state["compaction"]["segments"] for r in s["records"]]


def test_guided_steps_compact_keep_gaps_and_expire_the_tombstone(tmp_path):
    """Seed 002 §1.4 and 003 Q27-28: the latest value per key survives, offsets become non-contiguous."""
    kind = make_kind(tmp_path)
    kind.step()
    kind.step()                                     # the first pass
    c = kind.kind_state()["compaction"]
    assert [r[0] for r in records(kind.kind_state())] == [2, 3, 4, 5]            # 0 and 1 superseded: a gap
    assert {r[1]: r[2] for r in records(kind.kind_state())} == {"fig": "30", "apple": "12", "pear": "21"}
    assert c["cleaner_point"] == 5 and c["offset_map"] == [["fig", 2], ["apple", 3], ["pear", 4]]
    assert [r[0] for r in c["before"][0]["records"]] == [0, 1, 2, 3, 4]
    kind.step()
    kind.step()                                     # the second pass keeps the tombstone
    assert [6, "pear", None] in records(kind.kind_state())
    kind.step()                                     # past its delete horizon: gone
    assert not any(r[1] == "pear" for r in records(kind.kind_state()))
    final = kind.kind_state()["compaction"]
    kind.back()
    kind.step()                                     # replay rebuilds the same state, before and map included
    again = kind.kind_state()["compaction"]
    assert again == final
    kind.close()


def test_a_keyless_record_is_refused_and_nothing_is_appended(tmp_path):
    kind = make_kind(tmp_path)
    leo = kind.logs[0].log_end_offset
    with pytest.raises(KafkaError, match="(?i)key"):
        send(kind, {"cmd": "produce", "count": 1, "value_size": 10})
    assert kind.logs[0].log_end_offset == leo
    with pytest.raises(CommandError):
        send(kind, {"cmd": "put", "key": "two words", "value": "x"})
    assert kind.logs[0].log_end_offset == leo
    kind.close()


def test_clean_now_says_why_it_did_not_clean(tmp_path):
    kind = make_kind(tmp_path)
    assert send(kind, {"cmd": "clean"}).startswith("Nothing to clean")
    for i in range(11):                              # two full segments of distinct keys, one in the active
        send(kind, {"cmd": "put", "key": f"k{i}", "value": "1"})
    send(kind, {"cmd": "clean"})                   # nothing to drop, but the cleaner point moves to 10
    for i in range(6):
        send(kind, {"cmd": "put", "key": f"n{i}", "value": "1"})
    text = send(kind, {"cmd": "clean"})
    assert text.startswith("Not cleaned: dirty ratio 0.") and "min.cleanable.dirty.ratio 0.5" in text
    kind.close()


@pytest.mark.asyncio
@pytest.mark.django_db
async def test_compaction_over_the_websocket(runtime):
    comm, first = await open_lesson("compaction")
    assert first["state"]["compaction"]["segments"][0]["records"] == []
    got = []
    for n in (1, 2):
        await comm.send_json_to({"cmd": "step"})
        got += await replies_until(comm, lambda m, n=n: m["type"] == "frame" and m["state"]["run"]["step"] == n)
    kinds = [e["kind"] for m in got if m["type"] == "frame" for e in m["events"]]
    assert {"cleaner_check", "offset_map_filled", "segments_cleaned", "cleaner_swap_step",
            "cleaner_point_moved"} <= set(kinds)
    assert last_state(got)["compaction"]["cleaner_point"] == 5
    await comm.send_json_to({"cmd": "put", "key": "two words", "value": "x"})
    err = (await replies_until(comm, lambda m: m["type"] == "error"))[-1]
    assert err["field"] == "key"
    await comm.send_json_to({"cmd": "delete", "key": "apple"})
    ack = (await replies_until(comm, lambda m: m["type"] == "ack"))[-1]
    assert "tombstone for apple" in ack["text"]
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db
async def test_step_mode_shows_the_swap_files_one_event_at_a_time(runtime):
    """In step mode every event is a frame with the state right after it: mid-pass the
    directory holds the .cleaned and then .swap files, and the state is still readable."""
    comm, _ = await open_lesson("compaction")
    await comm.send_json_to({"cmd": "mode", "step": True})
    got = []
    for n in (1, 2):
        await comm.send_json_to({"cmd": "step"})
        got += await replies_until(comm, lambda m, n=n: m["type"] == "frame" and m["state"]["run"]["step"] == n,
                                   timeout=20)
    frames = [m for m in got if m["type"] == "frame" and m["events"]]
    names = [{f["name"] for f in m["state"]["partitions"][0]["files"]} for m in frames]
    assert any(any(n.endswith(".cleaned") for n in s) for s in names)
    assert any(any(n.endswith(".swap") for n in s) for s in names)
    assert all("compaction" in m["state"] for m in frames)
    filling = [m["state"]["compaction"]["offset_map"] for m in frames if m["state"]["compaction"]["pass_running"]]
    assert filling and filling[-1] == [["fig", 2], ["apple", 3], ["pear", 4]]   # the map as the pass built it
    await comm.disconnect()
