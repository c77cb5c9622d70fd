"""The leader's checks on client batches (engine/records/validation.py) against kafka-python
3.0.12 reading the same bytes, and the cost of refusing a compression bomb.

    python bench/bench_validation.py [--quick]

1. Validate: ours = ``validate_client_batches`` on each client fixture (CRC, header rules,
   capped decompression, every record decoded, timestamps checked); the peer = kafka-python's
   ``DefaultRecordBatch`` checking the CRC and iterating every record of the same bytes
   (no rules). Ratio = our batches/s ÷ theirs (goal ≥ 1: the checks cost no more than a
   plain decode by an independent client library).
2. Refuse a bomb: a batch of under 1 MiB whose records inflate to 64 MiB, with
   max.message.bytes = 1 MiB: time to refuse it and the peak memory of doing so, beside the
   peer = plain (uncapped) decompression of the same section (goal: peak ≤ 2 × the cap,
   never the inflated size).
"""
from __future__ import annotations

import sys
import time
import tracemalloc
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import LogConfig  # noqa: E402
from engine.errors import RecordTooLargeError  # noqa: E402
from engine.records import CompressionType, SimpleRecord, build_batch  # noqa: E402
from engine.records.compression import decompress  # noqa: E402
from engine.records.validation import validate_client_batches  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "client-batches"
NOW = 1_700_000_000_200


def best_rate(fn, rounds: int, min_seconds: float) -> float:
    best = 0.0
    for _ in range(rounds):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, n / elapsed)
    return best


def peer_read(data: bytes) -> None:
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    for r in batch:
        r.key, r.value, r.timestamp, r.headers


def bench_validate(rounds: int, min_seconds: float) -> None:
    config = LogConfig(message_timestamp_before_max_ms=10**6, message_timestamp_after_max_ms=10**6)
    print(f"[validate] one client batch of 40 records, best of {rounds} rounds (batches/s)")
    print(f"  {'file':32} {'ours':>10} {'kafka-python':>13} {'ratio':>7}")
    for path in sorted(FIXTURES.glob("*.bin")):
        data = path.read_bytes()
        ours = best_rate(lambda: validate_client_batches(data, config, NOW, "t-0"), rounds, min_seconds)
        theirs = best_rate(lambda: peer_read(data), rounds, min_seconds)
        print(f"  {path.name:32} {ours:10.0f} {theirs:13.0f} {ours / theirs:6.2f}x")


def bench_bomb() -> None:
    cap = 1 << 20
    config = LogConfig(max_message_bytes=cap)
    print(f"[bomb] 64 MiB of zeros in one record, max.message.bytes={cap}")
    for codec in (CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD, CompressionType.SNAPPY):
        bomb = build_batch([SimpleRecord(bytes(64 << 20))], compression=codec)
        section = bomb[61:]
        tracemalloc.start()
        start = time.perf_counter()
        try:
            validate_client_batches(bomb, config, NOW, "t-0")
        except RecordTooLargeError:
            pass
        ours_s = time.perf_counter() - start
        ours_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        start = time.perf_counter()
        decompress(codec, section)
        peer_s = time.perf_counter() - start
        peer_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  {codec.name.lower():7} {len(bomb):>8} B sent: refused in {ours_s * 1e3:6.2f} ms, peak "
              f"{ours_peak / 2**20:5.2f} MiB (goal <= {2 * cap / 2**20:.0f}) | plain decompress "
              f"{peer_s * 1e3:7.2f} ms, peak {peer_peak / 2**20:6.2f} MiB")


def main() -> None:
    quick = "--quick" in sys.argv
    bench_validate(2 if quick else 5, 0.05 if quick else 0.2)
    bench_bomb()


if __name__ == "__main__":
    main()
