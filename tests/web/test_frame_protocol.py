"""The frame protocol: whole states and diffs against the last whole state, frames
serialised once, dropped frames repaired, bounded buffers, the frame pacer."""
from __future__ import annotations

import json

import pytest
from channels.layers import InMemoryChannelLayer
from django.conf import settings as django_settings
from hypothesis import given, settings, strategies as st

from engine.clock import VirtualClock
from engine.events import EventLog
from engine.log.events import BatchAppended
from kafkaviz.live.frames import FrameBuilder, apply_state_diff, state_diff
from kafkaviz.live.runtime import Runtime, group_name, new_sandbox_id

from .framing import StateTracker

# JSON values with one type per leaf kind (states keep one type per field).
leaves = st.one_of(st.none(), st.integers(-10**6, 10**6), st.text(max_size=5))
json_values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=3), inner, max_size=5)), max_leaves=15)
states = st.dictionaries(st.text(max_size=3), json_values, max_size=6)


@settings(max_examples=100, deadline=None)
@given(states, states)
def test_a_diff_applied_to_the_old_state_gives_the_new_one(old, new):
    diff = state_diff(old, new)
    assert apply_state_diff(old, diff) == new
    # Through JSON, as it travels, too (array indexes become string keys).
    assert apply_state_diff(old, json.loads(json.dumps(diff))) == new
    if old == new:
        assert diff is None


def appended(log, first):
    return log.emit(BatchAppended(None, "orders", 0, 0, first, first, 0, 70, 1, 0, 0))


def test_frames_carry_a_whole_state_then_diffs_and_a_whole_state_every_n():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", full_every=3)
    frames = []
    for i in range(7):
        fb.add(appended(log, i))
        frames += fb.texts({"n": i, "files": ["a", "b"][: 1 + i % 2]}, now_s=i, as_text=False)
    assert [f["full"] for f in frames] == [True, False, False, True, False, False, True]
    assert "state" not in frames[1] and frames[1]["base"] == frames[0]["frame_seq"]
    assert frames[1]["diff"] == {"s": {"n": 1}, "p": {"files": {"n": 2, "s": {"1": "b"}}}}
    tracker = StateTracker()
    assert [tracker(f)["state"]["n"] for f in frames] == list(range(7))


def test_a_dropped_diff_frame_is_repaired_by_the_next_one():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", full_every=10)
    tracker = StateTracker()
    frames = []
    for i in range(4):
        fb.add(appended(log, i))
        frames += fb.texts({"n": i}, now_s=i, as_text=False)
    tracker(frames[0])
    tracker(frames[1])
    # frames[2] lost on the way (a full channel): the next applies anyway.
    assert tracker(frames[3])["state"] == {"n": 3}


def test_a_new_watcher_gets_a_whole_state_and_the_next_frame_is_whole_too():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", full_every=10)
    fb.add(appended(log, 0))
    fb.texts({"n": 0}, 0, as_text=False)
    fb.add(appended(log, 1))
    assert fb.texts({"n": 1}, 1, as_text=False)[0]["full"] is False
    snap = fb.snapshot({"n": 1}, list(log.envelopes))
    assert snap["full"] and snap["snapshot"] and snap["frame_seq"] == 2
    fb.add(appended(log, 2))
    nxt = fb.texts({"n": 2}, 2, as_text=False)[0]
    assert nxt["full"] and nxt["state"] == {"n": 2}


def test_step_mode_frames_are_bounded_and_the_rest_counted():
    log = EventLog(VirtualClock())
    fb = FrameBuilder("segments", max_events=5, step_mode=True)
    for i in range(12):
        fb.add(appended(log, i), state_fn=lambda i=i: {"after": i})
    frames = fb.texts({"after": "latest"}, 0, as_text=False)
    assert len(frames) == 5
    assert frames[0]["skipped"] == 7 and [f["events"][0]["first_offset"] for f in frames] == list(range(7, 12))


def test_frame_pacer_sends_at_once_after_quiet_and_paces_a_burst():
    fb = FrameBuilder("segments", interval_s=0.03)
    assert fb.delay(10.0) == 0
    assert fb.texts(lambda: {}, 10.0) == []        # nothing pending: nothing sent, the pace untouched
    assert fb.delay(10.0) == 0
    fb.touch()
    assert len(fb.texts(lambda: {}, 10.0)) == 1
    assert fb.delay(10.01) == pytest.approx(0.02)
    assert fb.delay(10.03) == 0


@pytest.mark.asyncio
async def test_one_serialised_text_reaches_every_watcher(tmp_path):
    layer = InMemoryChannelLayer()
    published = []

    async def publish(group, message):
        published.append(message)
        await layer.group_send(group, message)

    rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0},
                 publish=publish)
    sid = new_sandbox_id()
    watchers = [await layer.new_channel() for _ in range(3)]
    for ch in watchers:
        await layer.group_add(group_name(sid), ch)
    try:
        await rt.attach(sid, "segments")
        await rt.command(sid, {"cmd": "produce", "count": "2"})
        assert len(published) == 1 and set(published[0]) == {"type", "text"}
        texts = [(await layer.receive(ch))["text"] for ch in watchers]
        assert texts == [published[0]["text"]] * 3
        frame = json.loads(texts[0])
        assert frame["full"] and frame["state"]["partitions"][0]["log_end_offset"] == 2
    finally:
        rt.close_all()


@pytest.mark.asyncio
async def test_the_first_command_after_a_quiet_spell_is_published_at_once(tmp_path):
    sent = []

    async def publish(group, message):
        sent.append(message)

    rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0,
                                               "FRAME_INTERVAL_MS": 10_000}, publish=publish)
    sid = new_sandbox_id()
    try:
        await rt.attach(sid, "segments")
        await rt.command(sid, {"cmd": "produce", "count": "1"})
        assert len(sent) == 1                       # no timer in the way of a click
        await rt.command(sid, {"cmd": "produce", "count": "1"})
        assert len(sent) == 1 and rt.sandboxes[sid].flush_handle is not None   # a burst waits its turn
    finally:
        rt.close_all()



def test_a_diff_sees_changes_to_parts_the_kind_shares_with_its_state():
    """A kind may return the same mutable dict in every state (lesson 14 keeps its consumers'
    reads in one); the diff base must be a copy, or in-place changes vanish from the diffs."""
    from engine.clock import VirtualClock
    from engine.events import EventLog
    from engine.log.events import LogFlushed
    from kafkaviz.live.frames import FrameBuilder, apply_state_diff

    log = EventLog(VirtualClock())
    fb = FrameBuilder("k")
    reads: dict = {}
    log.subscribe(lambda env: fb.add(env))
    log.emit(LogFlushed(None, "t", 0, 1, []))
    first = fb.texts({"reads": reads}, 0.0, as_text=False)[-1]
    reads["read_committed"] = [1, 2]
    log.emit(LogFlushed(None, "t", 0, 2, []))
    second = fb.texts({"reads": reads}, 1.0, as_text=False)[-1]
    assert first["full"] and not second["full"]
    assert apply_state_diff({"reads": {}}, second["diff"]) == {"reads": {"read_committed": [1, 2]}}
