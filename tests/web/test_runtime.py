"""The runtime and the frame builder without the WebSocket: coalescing, step mode,
ids and data dirs, idle reclaim, validation."""
from __future__ import annotations

import asyncio

import pytest
from django.conf import settings as django_settings

from engine.clock import VirtualClock
from engine.events import EventLog
from engine.log.events import BatchAppended
from kafkaviz.live.frames import FrameBuilder, describe
from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .framing import StateTracker


class FakeTime:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def make_runtime(tmp_path, **overrides):
    sent: list[tuple[str, dict]] = []
    tracker = StateTracker()

    async def publish(group, message):
        sent.append((group, {"frame": tracker.message(message)}))

    now = FakeTime()
    settings = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 50, "REAP_EVERY_SECONDS": 0, **overrides}
    return Runtime(tmp_path / "data", settings=settings, publish=publish, now=now), sent, now


def appended(seq_clock_log, first):
    return seq_clock_log.emit(BatchAppended(None, "orders", 0, 0, first, first, 0, 70, 1, 0, 0))


def test_frame_builder_bounds_events_per_frame_and_counts_the_rest():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", max_events=10)
    for i in range(25):
        fb.add(appended(log, i))
    frames = fb.texts({"n": 1}, now_s=0.0, as_text=False)
    assert len(frames) == 1
    assert [e["first_offset"] for e in frames[0]["events"]] == list(range(15, 25))
    assert frames[0]["skipped"] == 15 and frames[0]["state"] == {"n": 1}


def test_frame_builder_step_mode_gives_one_frame_per_event_with_its_state():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", step_mode=True)
    for i in range(3):
        fb.add(appended(log, i), state_fn=lambda i=i: {"after": i})
    tracker = StateTracker()
    frames = [tracker(f) for f in fb.texts({"after": "latest"}, now_s=0.0, as_text=False)]
    assert [f["events"][0]["first_offset"] for f in frames] == [0, 1, 2]
    assert [f["state"] for f in frames] == [{"after": 0}, {"after": 1}, {"after": 2}]
    assert all(f["mode"] == "step" for f in frames)


def test_frame_builder_with_nothing_pending_gives_no_frame():
    assert FrameBuilder("segments").texts({}, now_s=0.0) == []


def test_describe_names_the_segment_file_in_twenty_digits():
    text = describe({"kind": "segment_rolled", "partition": 0, "old_segment": 0, "new_segment": 6,
                     "reason": "size", "detail": ""})
    assert text == "partition 0: rolled a new segment 00000000000000000006.log (reason: size)"


def test_describe_tells_a_traced_lookup_in_one_line():
    text = describe({"kind": "log_lookup", "partition": 0, "mode": "offset", "target": 17, "candidates": [0, 12],
                     "segment": 12, "rule": "largest base offset <= target", "time_probes": [],
                     "probes": [[0, 2, 1, 15, 300, "right"], [2, 2, 2, 19, 450, "left"]],
                     "scan": [[300, 16, 16, 5, False], [377, 17, 17, 6, True]], "offset": 17, "position": 377,
                     "timestamp": None})
    # one line, worded by engine/narration.py
    assert text == ("partition 0: lookup of offset 17: segment 00000000000000000012 chosen among 2 (largest base offset "
                    "<= target); 2 binary-search probe(s) in the offset index, ending at entry 2 (offset 19 → byte 450); "
                    "then scanned 2 batch(es) from byte 300; found offset 17 at byte 377")


@pytest.mark.asyncio
async def test_rapid_commands_are_coalesced_into_a_bounded_number_of_frames(tmp_path):
    # A long interval so the flush timer cannot fire during the test; the test then
    # fires it by hand, as the event loop would.
    rt, sent, now = make_runtime(tmp_path, FRAME_INTERVAL_MS=60_000)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    for _ in range(20):
        await rt.command(sid, {"cmd": "produce", "count": "1"})
    sb = rt.sandboxes[sid]
    assert len(sent) == 1                      # the first command flushed at once
    assert sb.flush_handle is not None         # one timer holds the other 19
    sb.flush_handle.cancel()
    now.t += 60
    await rt.flush(sb)
    frames = [m["frame"] for _, m in sent]
    assert len(frames) == 2
    assert frames[-1]["state"]["partitions"][0]["log_end_offset"] == 20
    appended_offsets = [e["first_offset"] for f in frames for e in f["events"] if e["kind"] == "batch_appended"]
    assert appended_offsets == list(range(20))
    rt.close_all()


@pytest.mark.asyncio
async def test_step_mode_publishes_every_event_as_its_own_frame(tmp_path):
    rt, sent, _ = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    await rt.command(sid, {"cmd": "mode", "step": "true"})
    sent.clear()
    before = rt.sandboxes[sid].engine.events.seq
    await rt.command(sid, {"cmd": "produce", "count": "3"})
    after = rt.sandboxes[sid].engine.events.seq
    frames = [m["frame"] for _, m in sent if m["frame"]["events"][0]["kind"] != "run_moved"]
    assert len(frames) == after - before > 3
    assert [f["events"][0]["seq"] for f in frames] == list(range(before + 1, after + 1))
    rt.close_all()


@pytest.mark.asyncio
async def test_frames_go_to_the_sandbox_group_only(tmp_path):
    rt, sent, _ = make_runtime(tmp_path)
    a, b = new_sandbox_id(), new_sandbox_id()
    await rt.attach(a, "segments")
    await rt.attach(b, "segments")
    await rt.command(a, {"cmd": "produce", "count": "1"})
    assert {group for group, _ in sent} == {f"sandbox.{a}"}
    rt.close_all()


@pytest.mark.asyncio
async def test_sandbox_ids_not_issued_by_the_server_are_refused(tmp_path):
    rt, _, _ = make_runtime(tmp_path)
    for bad in ("../../etc", "ABC", "0" * 31, "g" * 32):
        with pytest.raises(CommandError):
            await rt.attach(bad, "segments")
    assert not any((tmp_path / "data").iterdir())


@pytest.mark.asyncio
async def test_sandbox_data_dir_is_under_the_root_and_named_by_its_id(tmp_path):
    rt, _, _ = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    # The run's files: one directory per run of the sandbox (a reset or an import starts run-2)
    assert (tmp_path / "data" / sid / "run-1" / "orders-0" / "00000000000000000000.log").exists()
    rt.close_all()


@pytest.mark.asyncio
async def test_idle_sandboxes_are_reclaimed_and_their_data_removed(tmp_path):
    rt, _, now = make_runtime(tmp_path, IDLE_SECONDS=60)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    await rt.detach(sid)
    now.t += 30
    assert rt.reap_idle() == []
    now.t += 31
    assert rt.reap_idle() == [sid]
    assert sid not in rt.sandboxes and not (tmp_path / "data" / sid).exists()
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "produce"})
    assert err.value.code == "not_found"


@pytest.mark.asyncio
async def test_watched_sandboxes_are_not_reclaimed(tmp_path):
    rt, _, now = make_runtime(tmp_path, IDLE_SECONDS=60)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    now.t += 3600
    assert rt.reap_idle() == []
    rt.close_all()


@pytest.mark.asyncio
async def test_sandbox_count_is_capped_with_a_clear_message(tmp_path):
    rt, _, _ = make_runtime(tmp_path, MAX_SANDBOXES=1)
    await rt.attach(new_sandbox_id(), "segments")
    with pytest.raises(CommandError) as err:
        await rt.attach(new_sandbox_id(), "segments")
    assert err.value.code == "busy" and "as many sandboxes as it allows" in err.value.message
    rt.close_all()


@pytest.mark.asyncio
async def test_disk_quota_refuses_produce_with_a_clear_message(tmp_path):
    rt, _, _ = make_runtime(tmp_path, MAX_DISK_BYTES=5000)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "produce", "count": "50", "value_size": "100"})
    assert err.value.code == "quota" and "5000 bytes of disk" in err.value.message
    assert rt.sandboxes[sid].engine.logs[0].log_end_offset == 0
    rt.close_all()


@pytest.mark.asyncio
async def test_jump_clock_runs_retention_marks_deleted_then_removes(tmp_path):
    rt, _, _ = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    await rt.command(sid, {"cmd": "produce", "count": "12"})
    await rt.command(sid, {"cmd": "advance", "ms": "65000"})
    state = rt.sandboxes[sid].engine.state()
    names = [f["name"] for f in state["partitions"][0]["files"]]
    assert "00000000000000000000.log.deleted" in names
    assert state["partitions"][0]["log_start_offset"] == 12
    await rt.command(sid, {"cmd": "advance", "ms": "30000"})
    names = [f["name"] for f in rt.sandboxes[sid].engine.state()["partitions"][0]["files"]]
    assert not [n for n in names if n.endswith(".deleted")]
    assert {t["id"]: t["done"] for t in rt.sandboxes[sid].engine.state()["tasks"]} == \
        {"third-segment": True, "retention-delete": True, "file-removed": True}
    rt.close_all()


@pytest.mark.asyncio
async def test_a_long_clock_jump_shows_deleted_files_before_they_go(tmp_path):
    """A jump past retention.ms and file.delete.delay.ms at once still publishes a frame
    in which the expired segment is renamed .deleted, before the frame where it is gone."""
    rt, sent, _ = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    await rt.command(sid, {"cmd": "produce", "count": "12"})
    sent.clear()
    await rt.command(sid, {"cmd": "advance", "ms": "120000"})
    await rt.flush(rt.sandboxes[sid])
    frames = [m["frame"] for _, m in sent]
    with_deleted = [i for i, f in enumerate(frames)
                    if any(x["name"].endswith(".deleted") for x in f["state"]["partitions"][0]["files"])]
    assert with_deleted, "no frame showed the .deleted phase"
    last = frames[-1]["state"]["partitions"][0]["files"]
    assert not [x for x in last if x["name"].endswith(".deleted")] and with_deleted[-1] < len(frames) - 1
    rt.close_all()


def test_stale_sandbox_dirs_from_an_earlier_run_are_swept_at_start(tmp_path):
    import os

    root = tmp_path / "data"
    stale, fresh, other = root / new_sandbox_id(), root / new_sandbox_id(), root / "not-a-sandbox"
    for d in (stale, fresh, other):
        (d / "orders-0").mkdir(parents=True)
        (d / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    old = 1_000_000_000
    for p in [stale, *stale.rglob("*"), other, *other.rglob("*")]:
        os.utime(p, (old, old))
    rt, _, _ = make_runtime(tmp_path, IDLE_SECONDS=60)
    assert stale.exists()                          # not in the constructor (a visitor's first connect)
    rt.sweep_stale_dirs()                          # the background reaper's first job
    assert not stale.exists() and fresh.exists() and other.exists()
