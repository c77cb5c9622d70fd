"""The listener's own behaviour, driven over raw sockets: version negotiation (KIP-511),
bad clients, Metadata's endpoints, the clock, the request record, per-connection links."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from wire.apis import SUPPORTED
from wire.codec import RequestHeader, ResponseHeader, codec

API_VERSIONS, METADATA, PRODUCE = 18, 3, 0


def _frame(api_key: int, version: int, body: bytes, correlation_id: int = 7, flexible: bool = False) -> bytes:
    head = RequestHeader.encode({"request_api_key": api_key, "request_api_version": version,
                                 "correlation_id": correlation_id, "client_id": "raw"}, 2 if flexible else 1)
    payload = head + body
    return len(payload).to_bytes(4, "big") + payload


def _connect(listener, broker: int = 0) -> socket.socket:
    host, port = listener.server.endpoints[broker]
    s = socket.create_connection((host, port), timeout=5)
    return s


def _read_frame(s: socket.socket) -> bytes:
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf
    size = int.from_bytes(exactly(4), "big")
    return exactly(size)


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_api_versions_lists_every_served_api(listener):
    s = _connect(listener)
    s.sendall(_frame(API_VERSIONS, 3, codec("ApiVersionsRequest", 3).encode(
        {"client_software_name": "raw", "client_software_version": "1"}), flexible=True))
    data = _read_frame(s)
    header, pos = ResponseHeader.decode(data, 0)        # ApiVersions answers with header v0 always
    body, _ = codec("ApiVersionsResponse", 3).decode(data, pos)
    assert header["correlation_id"] == 7 and body["error_code"] == 0
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert ranges == {key: (lo, hi) for key, (_, lo, hi) in SUPPORTED.items()}
    assert ranges[PRODUCE] == (0, 11) and ranges[1] == (4, 12) and ranges[METADATA] == (0, 12)


def test_an_api_versions_request_at_an_unknown_version_gets_kafkas_v0_fallback(listener):
    """KIP-511: a v0 body with UNSUPPORTED_VERSION and the supported ranges, read here by
    kafka-python's own decoder as a client would."""
    from kafka.protocol.metadata import ApiVersionsResponse
    s = _connect(listener)
    s.sendall(_frame(API_VERSIONS, 99, b"\x00garbage-a-newer-client-might-send", correlation_id=42))
    data = _read_frame(s)
    assert int.from_bytes(data[:4], "big") == 42
    resp = ApiVersionsResponse.decode(data[4:], version=0)
    assert resp.error_code == 35
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}[API_VERSIONS] == (0, 4)
    # the connection stays usable: the client retries at a version we serve
    s.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=43))
    assert int.from_bytes(_read_frame(s)[:4], "big") == 43


def test_a_served_api_at_a_version_not_advertised_gets_unsupported_version(listener):
    s = _connect(listener)
    s.sendall(_frame(METADATA, 13, codec("MetadataRequest", 13).encode({"topics": []}), flexible=True))
    data = _read_frame(s)
    _, pos = ResponseHeader.decode(data, 1)
    body, _ = codec("MetadataResponse", 13).decode(data, pos)
    assert body["error_code"] == 35


@pytest.mark.parametrize("frame", [
    _frame(PRODUCE, 2, b"\x00" * 16),                  # Produce v0-2: gone from Kafka 4 (KAFKA-18659)
    _frame(999, 0, b""),                               # an API key nobody has
    (2**31 - 1).to_bytes(4, "big") + b"\x00" * 8,      # a frame far above the cap: refused before reading it
    (-5).to_bytes(4, "big", signed=True),              # a negative size
    _frame(METADATA, 12, b"\xff\xff\xff\xff\xff\xff"),  # a body that does not decode
], ids=["produce-v2", "unknown-api", "huge-frame", "negative-size", "malformed-body"])
def test_a_bad_frame_closes_that_connection_only(listener, frame):
    bad, good = _connect(listener), _connect(listener)
    bad.sendall(frame)
    bad.settimeout(5)
    assert _closed(bad)
    good.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=5))
    assert int.from_bytes(_read_frame(good)[:4], "big") == 5


def test_metadata_advertises_one_loopback_endpoint_per_broker(listener):
    listener.call(lambda s: s.create_topic("meta-topic", 2, 3))
    s = _connect(listener, broker=2)
    s.sendall(_frame(METADATA, 12, codec("MetadataRequest", 12).encode({"topics": [{"name": "meta-topic"}]}),
                     flexible=True))
    data = _read_frame(s)
    _, pos = ResponseHeader.decode(data, 1)
    body, _ = codec("MetadataResponse", 12).decode(data, pos)
    assert {(b["node_id"], b["host"], b["port"]) for b in body["brokers"]} == {
        (b, h, p) for b, (h, p) in listener.server.endpoints.items()}
    assert all(h == "127.0.0.1" for h, _ in listener.server.endpoints.values())
    (topic,) = body["topics"]
    assert topic["name"] == "meta-topic" and len(topic["partitions"]) == 2
    assert all(len(p["replica_nodes"]) == 3 for p in topic["partitions"])


def test_the_engine_clock_starts_at_the_wall_clock_and_follows_it(listener):
    now = listener.call(lambda s: s.cluster.now_ms())
    assert abs(now - time.time() * 1000) < 2000
    time.sleep(0.3)
    later = listener.call(lambda s: s.pacer.catch_up())
    assert 250 <= later - now <= 2000


def test_every_decoded_request_is_recorded_with_its_virtual_arrival_time(listener):
    s = _connect(listener, broker=1)
    s.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=314))
    _read_frame(s)
    entries = listener.call(lambda srv: list(srv.recorder.entries))
    (entry,) = [e for e in entries if e.get("correlation_id") == 314]
    assert entry["kind"] == "request" and entry["api_key"] == API_VERSIONS and entry["broker"] == 1
    assert abs(entry["t"] - time.time() * 1000) < 5000
    times = [e["t"] for e in entries]
    assert times == sorted(times)


def test_a_cut_link_between_one_connection_and_its_broker_stops_only_that_connection(listener):
    a = _connect(listener)
    a.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=1))
    _read_frame(a)
    node_a = max(listener.call(lambda s: list(s._sessions)))     # the newest connection's node id
    b = _connect(listener)
    listener.call(lambda s: s.cluster.network.cut(node_a, 0))
    a.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=2))
    b.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=3))
    assert int.from_bytes(_read_frame(b)[:4], "big") == 3
    a.settimeout(0.5)
    with pytest.raises(socket.timeout):
        _read_frame(a)
    listener.call(lambda s: s.cluster.network.heal(node_a, 0))


def test_python_m_wire_prints_the_bootstrap_address_first(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "wire", "--brokers", "3", "--port", "0", "--data-dir",
                             str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        hosts = line.split(",")
        assert len(hosts) == 3 and all(h.startswith("127.0.0.1:") for h in hosts)
        host, port = hosts[0].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=9))
            assert int.from_bytes(_read_frame(s)[:4], "big") == 9
    finally:
        proc.terminate()
        proc.wait(10)


def test_connections_per_address_are_capped_and_idle_ones_time_out(tmp_path):
    from wire.threaded import Listener
    lst = Listener(tmp_path, max_connections_per_address=2, connections_max_idle_ms=300).start()
    try:
        first, second = _connect(lst), _connect(lst)
        for s in (first, second):
            s.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=1))
            _read_frame(s)
        third = _connect(lst)
        third.settimeout(5)
        assert _closed(third)                      # over the cap: closed at once
        time.sleep(0.6)                            # both go idle past connections.max.idle.ms
        first.settimeout(5)
        assert _closed(first)
        fourth = _connect(lst)                     # the idle ones gave their places back
        fourth.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=4))
        assert int.from_bytes(_read_frame(fourth)[:4], "big") == 4
    finally:
        lst.stop()


def test_requests_per_address_are_rate_limited_by_slowing_the_client(tmp_path):
    from wire.threaded import Listener
    lst = Listener(tmp_path, max_requests_per_second_per_address=20).start()
    try:
        s = _connect(lst)
        start = time.monotonic()
        s.sendall(b"".join(_frame(API_VERSIONS, 0, b"", correlation_id=i) for i in range(40)))
        for i in range(40):
            assert int.from_bytes(_read_frame(s)[:4], "big") == i
        # a burst of 20, then 20 more at 20 per second
        assert time.monotonic() - start >= 0.9
    finally:
        lst.stop()
