"""Fuzzing the frame decoder: random and mutated frames never raise anything but the two
protocol exceptions, each call is bounded in time, and what a call allocates is bounded by
the frame's own length (which the reader caps before reading it); over a socket, garbage
closes that connection and nothing escapes into the listener."""
from __future__ import annotations

import random
import socket
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.apis import SUPPORTED, decodable
from wire.codec import RequestHeader, codec
from wire.protocol import MAX_FRAME_BYTES, ProtocolError, Unsupported, frame_size, parse_request
from wire.schema import load_message

# Python objects are bigger than the bytes they decode from (a 1-byte struct becomes a
# dict): this is the allowance per input byte, on top of a fixed overhead.
BYTES_PER_INPUT_BYTE = 64     # measured: ~13 for a 380 KB frame of 20,000 Metadata topics
FIXED_OVERHEAD = 256 * 1024
CALL_SECONDS = 0.5


def _valid_frames() -> list[bytes]:
    """One minimal request of every served API and version (bodies from defaults)."""
    out = []
    for key, (name, low, high) in sorted(SUPPORTED.items()):
        for v in range(low, high + 1):
            if not decodable(key, v):
                continue
            flexible = v in load_message(name + "Request").flexible
            head = RequestHeader.encode({"request_api_key": key, "request_api_version": v, "correlation_id": v,
                                         "client_id": "fuzz"}, 2 if flexible else 1)
            body = _sample_body(name + "Request", v)
            out.append(head + codec(name + "Request", v).encode(body))
    return out


def _sample_body(name: str, version: int) -> dict:
    return _sample(load_message(name).fields, version)


def _sample(fields, version: int) -> dict:
    """Defaults, with one element in every array (so nested structs are in the frame)."""
    out = {}
    for f in fields:
        if version not in f.versions or not f.is_array:
            continue
        out[f.name] = [_sample(f.fields, version)] if f.is_struct else (["x"] if f.element == "string" else [1])
    return out


VALID = _valid_frames()


def _check(frame: bytes) -> None:
    tracemalloc.start()
    start = time.thread_time()     # CPU time: on a shared 2-core machine wall time measures the neighbours
    try:
        parse_request(frame)
    except (ProtocolError, Unsupported):
        pass
    finally:
        elapsed = time.thread_time() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < CALL_SECONDS, f"{elapsed:.3f}s for {len(frame)} bytes"
    assert peak <= BYTES_PER_INPUT_BYTE * len(frame) + FIXED_OVERHEAD, f"peak {peak} for {len(frame)} bytes"


def test_every_valid_frame_parses():
    assert len(VALID) > 30
    for frame in VALID:
        req = parse_request(frame)
        assert req.correlation_id == req.api_version


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_protocol_errors(frame):
    _check(frame)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
       st.integers(0, 400), st.booleans())
def test_mutated_valid_frames_only_raise_protocol_errors(frame, flips, cut, truncate):
    data = bytearray(frame)
    for pos, value in flips:
        if data:
            data[pos % len(data)] = value
    if truncate:
        data = data[:max(0, len(data) - cut)]
    _check(bytes(data))


def test_huge_counts_are_refused_without_allocating_them():
    # Metadata v1: header, then a topics count of 2**31-1 with six bytes behind it.
    head = RequestHeader.encode({"request_api_key": 3, "request_api_version": 1, "correlation_id": 1,
                                 "client_id": None}, 1)
    _check(head + b"\x7f\xff\xff\xff" + b"\x00" * 6)
    # Fetch v12 (flexible): a compact topics array claiming 2**28 entries.
    head = RequestHeader.encode({"request_api_key": 1, "request_api_version": 12, "correlation_id": 1,
                                 "client_id": None}, 2)
    _check(head + b"\x00" + b"\x00" * 24 + b"\x80\x80\x80\x80\x01")


@pytest.mark.parametrize("size", [-1, 0, 7, MAX_FRAME_BYTES + 1, 2**31 - 1])
def test_frame_sizes_outside_the_cap_are_refused_before_reading(size):
    with pytest.raises(ProtocolError):
        frame_size(size.to_bytes(4, "big", signed=True))


def test_garbage_over_sockets_closes_connections_and_nothing_escapes(listener):
    errors = []
    listener.call(lambda s: __import__("asyncio").get_running_loop().set_exception_handler(
        lambda loop, ctx: errors.append(ctx)))
    rng = random.Random(21)
    host, port = listener.server.endpoints[0]
    for i in range(40):
        base = rng.choice(VALID)
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        payload = len(data).to_bytes(4, "big") + bytes(data) if i % 4 else bytes(rng.randbytes(rng.randint(1, 64)))
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(5)
            while s.recv(65536):
                pass
    with socket.create_connection((host, port), timeout=5) as s:
        frame = VALID[0]
        ok = RequestHeader.encode({"request_api_key": 18, "request_api_version": 0, "correlation_id": 77,
                                   "client_id": "after"}, 1)
        s.sendall(len(ok).to_bytes(4, "big") + ok)
        s.settimeout(5)
        assert s.recv(8)[4:8] == (77).to_bytes(4, "big")
    assert errors == []
