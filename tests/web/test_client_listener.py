""""Connect your own client" (kafkaviz/live/client_listener.py): the sandbox page's
listener of its own cluster. A real client (kcat, librdkafka) produces into it; the
records land in the sandbox's partitions, the requests are events of its frames, the
fault buttons cut the client off, Back is refused while the client is attached, and the
listener dies with the sandbox. Off in hosted mode unless a port range is set."""
from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess

import pytest
from django.conf import settings as django_settings

from kafkaviz.live import client_listener
from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .framing import StateTracker

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is a system package (make system-deps)")


def make_runtime(tmp_path):
    sent: list[dict] = []
    tracker = StateTracker()

    async def publish(group, message):
        sent.append(tracker.message(message))

    conf = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
            "COMMAND_BURST": 1000, "COMMANDS_PER_SECOND": 1000.0, "IDLE_SECONDS": 0}
    return Runtime(tmp_path / "data", settings=conf, publish=publish), sent


@pytest.fixture
def listening(settings):
    settings.KAFKAVIZ_CLIENT_LISTENER = {**settings.KAFKAVIZ_CLIENT_LISTENER, "ENABLED": True, "PORTS": ""}


def kcat(*args, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["kcat", *args], input=stdin, capture_output=True, text=True, timeout=timeout)


async def wait_for(pred, timeout=10.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if pred():
            return True
        await asyncio.sleep(0.05)
    return pred()


def events_of(sent, kind):
    return [e for f in sent if f.get("type") == "frame" for e in f.get("events", []) if e["kind"] == kind]


@pytest.mark.asyncio
async def test_kcat_produces_into_the_sandbox_and_its_requests_are_frames(tmp_path, listening):
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2})
    reply = await rt.command(sid, {"cmd": "client_port", "on": True})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    bootstrap = port.server.bootstrap
    assert bootstrap in reply["text"]
    assert len(port.server.endpoints) == len(sb.engine.run.cluster.brokers)
    before = sb.engine.run.cluster.state()["topics"]["t"]["partitions"][0]

    done = await asyncio.to_thread(kcat, "-b", bootstrap, "-P", "-t", "t", "-p", "0", "-X", "acks=all",
                                   stdin="from-kcat-1\nfrom-kcat-2\n")
    assert done.returncode == 0, done.stderr

    await wait_for(lambda: events_of(sent, "client_disconnected"))
    # The records are in the sandbox's own partition, on every replica (RF of the scenario).
    with sb.lock:
        cluster = sb.engine.run.cluster
        leader = cluster.controller.partition("t", 0).leader
        log = cluster.brokers[leader].partitions[("t", 0)].log
        values = [r.value for b in log.batches(log.log_start_offset, log.log_end_offset) for r in b.records]
    assert values[-2:] == [b"from-kcat-1", b"from-kcat-2"]
    assert before["leader"] == leader
    # Its connection and requests reached the watchers as events, with API, version, correlation id, error.
    requests = events_of(sent, "client_request")
    apis = {e["api"] for e in requests}
    assert {"ApiVersions", "Metadata", "Produce"} <= apis, apis
    answers = events_of(sent, "client_response")
    produce = [e for e in answers if e["api"] == "Produce"]
    assert produce and produce[-1]["error"] == "NONE" and produce[-1]["version"] >= 3
    assert all(isinstance(e["correlation_id"], int) and e["text"] for e in requests)
    assert events_of(sent, "client_connected")
    frame_state = [f for f in sent if f.get("type") == "frame"][-1]["state"]
    assert frame_state["client_port"]["open"] and frame_state["client_port"]["bootstrap"] == bootstrap
    rt.close_all()


@pytest.mark.asyncio
async def test_a_new_run_keeps_the_listener_and_back_replays_what_the_client_wrote(tmp_path, listening):
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "shape", "brokers": 3, "replication_factor": 3, "min_insync_replicas": 2})
    await rt.command(sid, {"cmd": "client_port"})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    bootstrap = port.server.bootstrap
    done = await asyncio.to_thread(kcat, "-b", bootstrap, "-P", "-t", "t", "-p", "0", "-X", "acks=all",
                                   stdin="from-kcat\n")
    assert done.returncode == 0, done.stderr
    assert await wait_for(lambda: port.attached == 0)

    def values():
        with sb.lock:
            cluster = sb.engine.run.cluster
            leader = cluster.controller.partition("t", 0).leader
            log = cluster.brokers[leader].partitions[("t", 0)].log
            return [r.value for b in log.batches(log.log_start_offset, log.log_end_offset) for r in b.records]

    assert b"from-kcat" in values()
    await rt.command(sid, {"cmd": "produce", "topic": "t", "partition": 0, "count": 1})
    assert sb.engine.run.position not in sb.engine.run.snapshot_steps()   # a served run takes no checkpoints
    await rt.command(sid, {"cmd": "back"})
    # Back restored a checkpoint from before the client and replayed the run's commands and
    # the client's requests (wire/traffic.py): the step the client wrote at holds its record.
    assert b"from-kcat" in values()
    await rt.command(sid, {"cmd": "back"})
    with sb.lock:                                  # a step before the client came: the topic is new
        cluster = sb.engine.run.cluster
        assert not any(r.value == b"from-kcat" for br in cluster.brokers.values() for p in br.partitions.values()
                       for b in p.log.batches(p.log.log_start_offset, p.log.log_end_offset) for r in b.records)
    assert port.is_open and port.cluster is sb.engine.run.cluster
    # A new run (load) is not the sandbox's end: the listener stays and serves the new cluster.
    await rt.command(sid, {"cmd": "load", "scenario": sb.engine.scenario["choices"][0],
                           "truncation": sb.engine.truncation})
    assert port.is_open and port.cluster is sb.engine.run.cluster and port.server.bootstrap
    rt.close_all()
    assert not port.is_open


@pytest.mark.asyncio
async def test_a_cut_client_link_cuts_the_real_client_and_back_waits_for_it(tmp_path, listening):
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "client_port"})
    sb = rt.sandboxes[sid]
    port = sb.engine.client_port_
    host, p = port.server.endpoints[0]
    # A connection that stays: a raw socket (ApiVersions v0) is enough to be "attached".
    sock = socket.create_connection((host, p))
    try:
        assert await wait_for(lambda: port.attached == 1)
        await rt.command(sid, {"cmd": "step"})
        with pytest.raises(CommandError) as refused:
            await rt.command(sid, {"cmd": "back"})
        assert refused.value.code == "busy"
        # The fault button on the client node (-1) applies to the connection's own node.
        await rt.command(sid, {"cmd": "cut_link", "a": -1, "b": 0, "both": True})
        node = next(iter(port.server._sessions))
        with sb.lock:
            assert sb.engine.run.cluster.network.links[(node, 0)].cut
            assert sb.engine.run.cluster.network.links[(0, node)].cut
        await rt.command(sid, {"cmd": "heal_link", "a": -1, "b": 0, "both": True})
        with sb.lock:
            assert (node, 0) not in sb.engine.run.cluster.network.links
    finally:
        sock.close()
    assert await wait_for(lambda: port.attached == 0)
    await rt.command(sid, {"cmd": "back"})        # allowed again
    rt.close_all()


@pytest.mark.asyncio
async def test_the_listener_dies_with_the_sandbox(tmp_path, listening):
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "client_port"})
    port = rt.sandboxes[sid].engine.client_port_
    host, p = port.server.endpoints[0]
    thread = port.thread
    sock = socket.create_connection((host, p))      # attached, and never says goodbye
    assert await wait_for(lambda: port.attached == 1)
    opened = client_listener.open_ports()
    await rt.detach(sid)
    assert rt.reap_idle() == [sid]                   # reclaimed: nothing waited for the client
    assert client_listener.open_ports() == opened - 1
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection((host, p), timeout=2).recv(1)
    sock.close()


@pytest.mark.asyncio
async def test_hosted_mode_leaves_it_off_unless_a_port_range_is_set(tmp_path, settings):
    settings.KAFKAVIZ_CLIENT_LISTENER = {**settings.KAFKAVIZ_CLIENT_LISTENER, "ENABLED": False, "PORTS": ""}
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    snap = await rt.attach(sid, "sandbox")
    assert snap["state"]["client_port"] == {"available": False, "open": False}
    with pytest.raises(CommandError) as refused:
        await rt.command(sid, {"cmd": "client_port"})
    assert refused.value.code == "forbidden"
    assert rt.sandboxes[sid].engine.client_port_.server is None
    rt.close_all()


def test_production_defaults_are_off_and_a_port_range_turns_it_on(monkeypatch):
    import importlib

    import kafkaviz.settings as live_settings
    monkeypatch.setenv("DJANGO_DEBUG", "0")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 50)
    monkeypatch.delenv("KAFKAVIZ_CLIENT_PORTS", raising=False)
    try:
        assert importlib.reload(live_settings).KAFKAVIZ_CLIENT_LISTENER["ENABLED"] is False
        monkeypatch.setenv("KAFKAVIZ_CLIENT_PORTS", "21000-21099")
        conf = importlib.reload(live_settings).KAFKAVIZ_CLIENT_LISTENER
        assert conf["ENABLED"] is True and client_listener.parse_ports(conf["PORTS"]) == (21000, 21099)
        monkeypatch.setenv("DJANGO_DEBUG", "1")
        monkeypatch.delenv("KAFKAVIZ_CLIENT_PORTS")
        assert importlib.reload(live_settings).KAFKAVIZ_CLIENT_LISTENER["ENABLED"] is True
    finally:
        monkeypatch.undo()
        importlib.reload(live_settings)


@pytest.mark.asyncio
async def test_a_port_range_places_the_brokers_inside_it(tmp_path, settings):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    lo = probe.getsockname()[1]
    probe.close()
    settings.KAFKAVIZ_CLIENT_LISTENER = {**settings.KAFKAVIZ_CLIENT_LISTENER, "ENABLED": True,
                                         "PORTS": f"{lo}-{lo + 40}"}
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "client_port"})
    port = rt.sandboxes[sid].engine.client_port_
    assert all(lo <= p <= lo + 40 for _, p in port.server.endpoints.values())
    rt.close_all()


@pytest.mark.asyncio
async def test_a_scenario_whose_clock_stands_at_zero_is_served_too(tmp_path, listening):
    """The sandbox's first scenario, one step in: its brokers' first tasks are due at 0 ms,
    which the pacer must run like any other (it once read a task due at 0 as "none")."""
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "step"})
    await rt.command(sid, {"cmd": "client_port"})
    bootstrap = rt.sandboxes[sid].engine.client_port_.server.bootstrap
    done = await asyncio.to_thread(kcat, "-b", bootstrap, "-L", "-m", "10")
    assert done.returncode == 0, done.stderr
    assert " 3 brokers:" in done.stdout
    rt.close_all()


@pytest.mark.asyncio
async def test_a_failed_command_shows_its_own_error_even_when_the_listener_cannot_follow(tmp_path, listening,
                                                                                         monkeypatch):
    """The listener follows the cluster after every command; when that fails too (no free
    ports for a new cluster), the command's own error is the one reported, not "busy"."""
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "sandbox")
    await rt.command(sid, {"cmd": "client_port"})
    port = rt.sandboxes[sid].engine.client_port_

    def no_ports(cluster):
        raise CommandError("busy", "Every client listener this server runs is taken", command="client_port")
    monkeypatch.setattr(port, "follow", no_ports)
    with pytest.raises(CommandError) as refused:
        await rt.command(sid, {"cmd": "produce", "topic": "no-such-topic", "partition": 0, "count": 1})
    assert refused.value.code == "engine" and "no-such-topic" in str(refused.value), refused.value
    # A command that succeeds still says the listener could not follow.
    with pytest.raises(CommandError) as busy:
        await rt.command(sid, {"cmd": "step"})
    assert busy.value.code == "busy"
    rt.close_all()
