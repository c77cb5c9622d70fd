"""Runs leave the sandbox and come back: export → import gives the same state, a share
link opened by another sandbox shows the same state, and tampered ids or files get a
clear message while the sandbox keeps its own run."""
from __future__ import annotations

import asyncio
import io
import json

import pytest
from django.conf import settings as django_settings

from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def make_runtime(tmp_path):
    async def publish(group, message):
        pass

    settings = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
                "COMMAND_BURST": 1000, "COMMANDS_PER_SECOND": 1000.0}
    return Runtime(tmp_path / "data", settings=settings, publish=publish)


def comparable(state):
    """The state a learner sees, minus try-it progress (a watcher's own achievement) and the
    run counter browsers use to notice a new run."""
    return json.dumps({k: v for k, v in state.items() if k not in ("tasks", "run_id")}, sort_keys=True)


async def two_sandboxes(tmp_path, slug):
    rt = make_runtime(tmp_path)
    a, b = new_sandbox_id(), new_sandbox_id()
    await rt.attach(a, slug)
    await rt.attach(b, slug)
    return rt, a, b


async def test_lesson_two_export_then_import_round_trips(tmp_path):
    rt, a, b = await two_sandboxes(tmp_path, "segments")
    for _ in range(3):
        await rt.command(a, {"cmd": "step"})
    await rt.command(a, {"cmd": "produce", "count": "3", "value_size": "200", "key": "k"})
    await rt.command(a, {"cmd": "back"})
    exported = (await rt.command(a, {"cmd": "export"}))["data"]
    assert exported["format"] == "kafkaviz-run" and exported["lesson"] == "segments"
    assert exported["run"]["step"] == 3 and len(exported["run"]["log"]) == 4
    reply = await rt.command(b, {"cmd": "import", "run": json.dumps(exported)})
    assert reply["text"] == "Run loaded: step 3 of 4."
    assert comparable(rt.sandboxes[b].engine.state()) == comparable(rt.sandboxes[a].engine.state())
    # The future survives too: stepping forward replays the learner's own produce.
    await rt.command(a, {"cmd": "step"})
    await rt.command(b, {"cmd": "step"})
    assert comparable(rt.sandboxes[b].engine.state()) == comparable(rt.sandboxes[a].engine.state())
    rt.close_all()


async def test_lesson_ten_share_link_opens_the_same_state_elsewhere(tmp_path):
    rt, a, b = await two_sandboxes(tmp_path, "leader-epoch")
    await rt.command(a, {"cmd": "load", "scenario": "kip101-divergence", "truncation": "epoch"})
    for _ in range(5):
        await rt.command(a, {"cmd": "step"})
    await rt.command(a, {"cmd": "crash", "broker": "2"})
    share_id = (await rt.command(a, {"cmd": "share"}))["share_id"]
    reply = await rt.command(b, {"cmd": "open_shared", "id": share_id})
    assert reply["text"] == "Run loaded: step 6 of 6."
    sa, sb = rt.sandboxes[a].engine.state(), rt.sandboxes[b].engine.state()
    assert sb["truncation"] == "epoch" and sb["scenario"]["name"] == "kip101-divergence"
    assert comparable(sb) == comparable(sa)
    rt.close_all()


async def test_tampered_share_ids_and_files_are_refused_and_change_nothing(tmp_path):
    rt, a, b = await two_sandboxes(tmp_path, "leader-epoch")
    await rt.command(b, {"cmd": "step"})
    before = comparable(rt.sandboxes[b].engine.state())
    with pytest.raises(CommandError, match="share link is unknown"):
        await rt.command(b, {"cmd": "open_shared", "id": "AAAAAAAA"})
    with pytest.raises(CommandError, match="is not a share id"):
        await rt.command(b, {"cmd": "open_shared", "id": "../../x!"})
    good = (await rt.command(b, {"cmd": "export"}))["data"]
    bad_files = {
        "not json": "{nope",
        "wrong format": json.dumps({**good, "format": "other"}),
        "other lesson": json.dumps({**good, "lesson": "segments"}),
        "unknown command": json.dumps({**good, "run": {**good["run"], "log": [{"cmd": "rm_rf", "broker": 1}]}}),
        "bad broker": json.dumps({**good, "run": {**good["run"], "log": good["run"]["log"][:1] + [
            {"cmd": "crash", "broker": 9}], "step": 2}}),
        "step past the end": json.dumps({**good, "run": {**good["run"], "step": 99}}),
    }
    for why, text in bad_files.items():
        with pytest.raises(CommandError) as err:
            await rt.command(b, {"cmd": "import", "run": text})
        assert err.value.message, why
        assert comparable(rt.sandboxes[b].engine.state()) == before, why
    # The sandbox is still usable.
    assert (await rt.command(b, {"cmd": "step"}))["type"] == "ack"
    rt.close_all()


async def test_a_lesson_two_file_with_a_forged_step_command_is_refused(tmp_path):
    rt, a, _b = await two_sandboxes(tmp_path, "segments")
    good = (await rt.command(a, {"cmd": "export"}))["data"]
    forged = {**good, "run": {"log": [{"id": None, "do": [{"cmd": "produce", "count": "9999"}], "scripted": False}],
                              "step": 1}}
    with pytest.raises(CommandError, match="between 1 and 50"):
        await rt.command(a, {"cmd": "import", "run": json.dumps(forged)})
    rt.close_all()


async def test_sandbox_builds_a_cluster_and_the_engine_refuses_an_impossible_one(tmp_path):
    rt = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    reply = await rt.command(sid, {"cmd": "shape", "brokers": "4", "partitions": "2", "replication_factor": "3",
                                   "min_insync_replicas": "2", "truncation": "hw", "unclean": "true"})
    assert reply["text"].startswith("Your cluster: 4 brokers, 2 partition(s), RF 3")
    st = rt.sandboxes[sid].engine.state()
    assert len(st["brokers"]) == 4 and len(st["partition"]["isr"]) == 3 and st["truncation"] == "hw"
    before = comparable(st)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "shape", "brokers": "2", "replication_factor": "3"})
    assert err.value.code == "engine" and "replication factor 3 is larger than the number of brokers (2)" in \
        err.value.message
    assert comparable(rt.sandboxes[sid].engine.state()) == before
    # A shaped run round-trips through export/import like any other.
    exported = (await rt.command(sid, {"cmd": "export"}))["data"]
    await rt.command(sid, {"cmd": "crash", "broker": "1"})
    await rt.command(sid, {"cmd": "import", "run": json.dumps(exported)})
    assert comparable(rt.sandboxes[sid].engine.state()) == before
    rt.close_all()


async def test_a_lesson_run_forks_into_the_sandbox_but_not_into_another_lesson(tmp_path):
    rt = make_runtime(tmp_path)
    lesson, sandbox, other = new_sandbox_id(), new_sandbox_id(), new_sandbox_id()
    await rt.attach(lesson, "leader-epoch")
    await rt.attach(sandbox, "sandbox")
    await rt.attach(other, "segments")
    for _ in range(6):
        await rt.command(lesson, {"cmd": "step"})
    share_id = (await rt.command(lesson, {"cmd": "share"}))["share_id"]
    reply = await rt.command(sandbox, {"cmd": "open_shared", "id": share_id})
    assert reply["text"] == "Run loaded: step 6 of 13."       # 16 commands, 13 steps
    forked, original = rt.sandboxes[sandbox].engine.state(), rt.sandboxes[lesson].engine.state()
    # The engine's state is the same; only the lesson's own words (step notes) stay behind.
    for key in ("lanes", "brokers", "partition", "verdict", "acknowledged", "clock_ms", "truncation"):
        assert forked[key] == original[key], key
    assert (forked["run"]["step"], forked["run"]["total"]) == (6, 13)
    with pytest.raises(CommandError, match="share link is unknown"):
        await rt.command(other, {"cmd": "open_shared", "id": share_id})
    rt.close_all()


async def test_an_expired_share_link_is_refused_clearly_and_purged(tmp_path):
    from datetime import timedelta

    from django.core.management import call_command
    from django.db import connections
    from django.utils import timezone

    from kafkaviz.live.models import SharedRun

    def in_db(fn):
        # In a worker thread that closes its connection (as the runtime's share commands do).
        def run():
            try:
                return fn()
            finally:
                connections.close_all()
        return asyncio.to_thread(run)

    assert django_settings.KAFKAVIZ_SHARE_DAYS == 30
    rt, a, b = await two_sandboxes(tmp_path, "segments")
    # Three different runs (identical runs are stored once, under one link).
    await rt.command(a, {"cmd": "step"})
    old_id = (await rt.command(a, {"cmd": "share"}))["share_id"]
    await rt.command(a, {"cmd": "step"})
    other_id = (await rt.command(a, {"cmd": "share"}))["share_id"]
    await rt.command(a, {"cmd": "step"})
    fresh_id = (await rt.command(a, {"cmd": "share"}))["share_id"]
    aged = timezone.now() - timedelta(days=31)
    await in_db(lambda: SharedRun.objects.filter(pk__in=[old_id, other_id]).update(created=aged))
    before = comparable(rt.sandboxes[b].engine.state())
    with pytest.raises(CommandError, match="has expired: links last 30 days") as err:
        await rt.command(b, {"cmd": "open_shared", "id": old_id})
    assert err.value.code == "expired"
    assert comparable(rt.sandboxes[b].engine.state()) == before
    # Refused on access and deleted; the command purges the rest; a fresh link still opens.
    assert not await in_db(lambda: SharedRun.objects.filter(pk=old_id).exists())
    out = io.StringIO()
    await in_db(lambda: call_command("purge_shares", stdout=out))
    assert "Deleted 1 shared run(s) older than 30 days." in out.getvalue()
    assert await in_db(lambda: sorted(SharedRun.objects.values_list("pk", flat=True))) == [fresh_id]
    reply = await rt.command(b, {"cmd": "open_shared", "id": fresh_id})
    assert reply["text"] == "Run loaded: step 3 of 6."
    rt.close_all()


async def test_the_partition_switch_shows_any_partition_and_is_not_a_step(tmp_path):
    rt = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": "3", "partitions": "3", "replication_factor": "2",
                           "min_insync_replicas": "1", "truncation": "epoch"})
    st = rt.sandboxes[sid].engine.state()
    assert st["partition_ids"] == [0, 1, 2] and st["partition"]["partition"] == 0
    steps = st["run"]["total"]
    reply = await rt.command(sid, {"cmd": "view_partition", "partition": "2"})
    assert reply["text"] == "Showing partition t-2."
    st = rt.sandboxes[sid].engine.state()
    assert st["partition"]["partition"] == 2 and st["run"]["total"] == steps
    assert {lane["broker"] for lane in st["lanes"]} == set(st["partition"]["replicas"])
    with pytest.raises(CommandError, match="between 0 and 2"):
        await rt.command(sid, {"cmd": "view_partition", "partition": "3"})
    # A run with one partition falls back to showing partition 0, and refuses another.
    await rt.command(sid, {"cmd": "load", "scenario": "kip101-data-loss", "truncation": "epoch"})
    while not rt.sandboxes[sid].engine.state()["partition_ids"]:
        await rt.command(sid, {"cmd": "step"})       # until the scenario creates its topic
    st = rt.sandboxes[sid].engine.state()
    assert st["partition_ids"] == [0] and st["partition"]["partition"] == 0
    with pytest.raises(CommandError, match="Topic t has partitions 0 to 0.") as err:
        await rt.command(sid, {"cmd": "view_partition", "partition": "1"})
    assert err.value.field == "partition"
    assert rt.sandboxes[sid].engine.state()["partition"]["partition"] == 0
    rt.close_all()


async def test_a_cluster_run_exports_lesson_steps_not_commands(tmp_path):
    # Lesson 10's scenario merges a produce with the next command: 6 steps run 8 commands.
    # The export is every kind's: lesson steps, each the commands it runs, and the step
    # the page counts (its file name says it), plus the world the run plays.
    rt = make_runtime(tmp_path)
    a, b = new_sandbox_id(), new_sandbox_id()
    for sid in (a, b):
        await rt.attach(sid, "leader-epoch")
    for _ in range(6):
        await rt.command(a, {"cmd": "step"})
    data = (await rt.command(a, {"cmd": "export"}))["data"]
    run, engine = data["run"], rt.sandboxes[a].engine
    assert set(run) == {"world", "log", "step"} and run["world"] == {"scenario": "kip101-data-loss", "truncation": "hw"}
    assert run["step"] == engine.position == 6 and len(run["log"]) == 13
    assert sum(len(e["do"]) for e in run["log"][:6]) == engine.run.position > 6
    assert all(e["scripted"] and e["id"] == f"kip101-data-loss:{n}" for n, e in enumerate(run["log"], 1))
    reply = await rt.command(b, {"cmd": "import", "run": json.dumps(data)})
    assert reply["text"] == "Run loaded: step 6 of 13."
    assert rt.sandboxes[b].engine.run.position == engine.run.position
    assert rt.sandboxes[b].engine.run.event_digest() == engine.run.event_digest()
    rt.close_all()
