"""The hosted demo's limits: sandboxes per process and per address, reclaim of
unwatched sandboxes in the background and in batches, queued commands, connections
per address, the busy page and /healthz."""
from __future__ import annotations

import asyncio

import pytest
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.live.runtime import BUSY_MESSAGE, Runtime, new_sandbox_id, set_runtime
from kafkaviz.live.validation import CommandError

from .test_runtime import FakeTime


def make_runtime(tmp_path, **overrides):
    now = FakeTime()
    settings = {**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0, **overrides}
    return Runtime(tmp_path / "data", settings=settings, now=now), now


@pytest.mark.asyncio
async def test_one_address_may_hold_only_a_few_sandboxes(tmp_path):
    rt, _ = make_runtime(tmp_path, MAX_SANDBOXES_PER_ADDRESS=2)
    for _ in range(2):
        await rt.attach(new_sandbox_id(), "segments", address="10.0.0.1")
    with pytest.raises(CommandError) as err:
        await rt.attach(new_sandbox_id(), "segments", address="10.0.0.1")
    assert err.value.code == "quota" and "the most one address may hold" in err.value.message
    await rt.attach(new_sandbox_id(), "segments", address="10.0.0.2")     # another visitor is not affected
    assert len(rt.sandboxes) == 3
    rt.close_all()


@pytest.mark.asyncio
async def test_a_full_process_says_busy_and_attach_never_reclaims_inline(tmp_path):
    rt, now = make_runtime(tmp_path, MAX_SANDBOXES=3, IDLE_SECONDS=60)
    ids = [new_sandbox_id() for _ in range(3)]
    for sid in ids:
        await rt.attach(sid, "segments", address="10.0.0.1")
        await rt.detach(sid)
    now.t += 61
    with pytest.raises(CommandError) as err:
        await rt.attach(new_sandbox_id(), "segments", address="10.0.0.2")
    assert err.value.code == "busy" and err.value.message == BUSY_MESSAGE
    assert set(rt.sandboxes) == set(ids)           # nothing reclaimed on the visitor's path
    assert sorted(await rt.reap()) == sorted(ids)  # the background reaper does it
    await rt.attach(new_sandbox_id(), "segments", address="10.0.0.2")
    rt.close_all()


@pytest.mark.asyncio
async def test_reclaim_runs_in_batches_and_removes_files(tmp_path, monkeypatch):
    rt, now = make_runtime(tmp_path, IDLE_SECONDS=60, REAP_BATCH=4, MAX_SANDBOXES_PER_ADDRESS=0)
    ids = [new_sandbox_id() for _ in range(10)]
    for sid in ids:
        await rt.attach(sid, "segments")
        await rt.detach(sid)
    watched = new_sandbox_id()
    await rt.attach(watched, "segments")
    batches = []
    close_all = rt._close_all
    monkeypatch.setattr(rt, "_close_all", lambda sbs: (batches.append(len(sbs)), close_all(sbs)))
    now.t += 30
    assert await rt.reap() == []                   # not idle long enough
    now.t += 31
    assert sorted(await rt.reap()) == sorted(ids)
    assert batches == [4, 4, 2]
    assert list(rt.sandboxes) == [watched]
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [watched]
    rt.close_all()


@pytest.mark.asyncio
async def test_the_background_reaper_reclaims_unwatched_sandboxes_by_itself(tmp_path):
    rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "IDLE_SECONDS": 0,
                                               "REAP_EVERY_SECONDS": 0.05})
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    await rt.detach(sid)
    for _ in range(500):                           # up to 10 s on a busy machine
        if sid not in rt.sandboxes and not (tmp_path / "data" / sid).exists():
            break
        await asyncio.sleep(0.02)
    assert sid not in rt.sandboxes and not (tmp_path / "data" / sid).exists()
    rt.close_all()


@pytest.mark.asyncio
async def test_commands_queued_for_one_sandbox_are_bounded(tmp_path):
    rt, _ = make_runtime(tmp_path, MAX_QUEUED_COMMANDS=2, COMMAND_BURST=100)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    sb = rt.sandboxes[sid]
    await sb.turn.acquire()                        # a long command holds the sandbox
    waiting = [asyncio.ensure_future(rt.command(sid, {"cmd": "produce", "count": "1"})) for _ in range(2)]
    await asyncio.sleep(0.01)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "produce", "count": "1"})
    assert err.value.code == "rate_limited" and "still working" in err.value.message
    sb.turn.release()
    assert [r["type"] for r in await asyncio.gather(*waiting)] == ["ack", "ack"]
    assert sb.engine.logs[0].log_end_offset == 2
    rt.close_all()


@pytest.mark.asyncio
async def test_connections_per_address_are_capped(tmp_path):
    rt, _ = make_runtime(tmp_path, MAX_CONNECTIONS_PER_ADDRESS=2)
    assert await rt.open_connection("a") and await rt.open_connection("a")
    assert not await rt.open_connection("a")
    assert await rt.open_connection("b")
    await rt.close_connection("a")
    assert await rt.open_connection("a")


@pytest.fixture
def small_runtime(tmp_path):
    rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0,
                                               "MAX_SANDBOXES": 1})
    previous = set_runtime(rt)
    yield rt
    rt.close_all()
    set_runtime(previous)


@pytest.mark.asyncio
async def test_healthz_reports_sandboxes_rooms_and_disk(small_runtime):
    await small_runtime.attach(new_sandbox_id(), "segments")
    body = Client().get("/healthz").json()
    assert body["status"] == "busy" and body["sandboxes"] == 1 and body["max_sandboxes"] == 1
    assert body["rooms"] == 0 and body["watchers"] == 1 and body["disk_bytes"] > 0
    small_runtime.close_all()


@pytest.mark.asyncio
async def test_a_full_process_serves_a_friendly_busy_page(small_runtime):
    client = Client()
    assert client.get("/lessons/segments/").status_code == 200   # this visitor's id is issued...
    await small_runtime.attach(new_sandbox_id(), "segments")      # ...but someone else takes the last slot
    response = client.get("/lessons/segments/")
    assert response.status_code == 503 and response["Retry-After"]
    assert b"busy" in response.content and b"try again" in response.content
    assert Client().get("/").status_code == 200                    # other pages are unaffected


def test_the_engine_disk_remembers_a_bounded_number_of_paths(tmp_path):
    from engine.disk import PATH_CACHE_ENTRIES, Disk

    disk = Disk(tmp_path)
    for i in range(3 * PATH_CACHE_ENTRIES):
        disk.path(f"orders-0/{i:020d}.log")
    assert 0 < len(disk._paths) <= PATH_CACHE_ENTRIES and 0 < len(disk._checked) <= PATH_CACHE_ENTRIES


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_busy_lesson_2_sandbox_keeps_its_path_caches_bounded(tmp_path):
    # 3,000 messages roll and delete a few hundred segments: thousands of file names,
    # of which the engine's Disk may remember only a bounded number (bench_sandboxes
    # measures the heap at the quota: 0.5 MB; unbounded, it was 5.8 MB).
    from engine.disk import PATH_CACHE_ENTRIES

    rt, _ = make_runtime(tmp_path, COMMAND_BURST=10**6, MAX_DISK_BYTES=10**9)
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    for i in range(60):
        await rt.command(sid, {"cmd": "produce", "partition": str(i % 2), "count": "50", "value_size": "100"})
    engine = rt.sandboxes[sid].engine
    assert sum(log.log_start_offset for log in engine.logs) > 2000          # retention deleted most of it
    assert len(engine.disk._paths) <= PATH_CACHE_ENTRIES and len(engine.disk._checked) <= PATH_CACHE_ENTRIES
    rt.close_all()


@pytest.mark.asyncio
async def test_a_stuck_sandbox_does_not_stall_the_others(tmp_path):
    # Commands wait for their sandbox on the event loop, not in the worker threads
    # every sandbox shares: a sandbox stuck in a long command holds one thread at most.
    import os

    queued = min(32, (os.cpu_count() or 1) + 4) + 2     # more than the default executor's threads
    rt, _ = make_runtime(tmp_path, MAX_QUEUED_COMMANDS=queued, COMMAND_BURST=100)
    stuck, other = new_sandbox_id(), new_sandbox_id()
    await rt.attach(stuck, "segments")
    await rt.attach(other, "segments")
    rt.sandboxes[stuck].lock.acquire()            # as if the engine were busy for a long time
    try:
        waiting = [asyncio.ensure_future(rt.command(stuck, {"cmd": "produce", "count": "1"})) for _ in range(queued)]
        await asyncio.sleep(0.05)
        reply = await asyncio.wait_for(rt.command(other, {"cmd": "produce", "count": "1"}), timeout=5)
        assert reply["type"] == "ack" and not any(w.done() for w in waiting)
    finally:
        rt.sandboxes[stuck].lock.release()
    assert [r["type"] for r in await asyncio.gather(*waiting)] == ["ack"] * queued
    rt.close_all()
