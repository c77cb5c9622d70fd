"""Record batch codec: ours (engine.records) against kafka-python 3.0.12's
DefaultRecordBatchBuilder / DefaultRecordBatch, doing the same work.

    python bench/bench_codec.py [--quick]

Workload: 100 records per batch, 10-byte keys, 100-byte values, CreateTime timestamps, no
headers; codecs none and lz4.

* encode — from the same (key, value, timestamp) rows to the batch's bytes. Ours builds its
  record objects (``SimpleRecord``) inside the timed call, as kafka-python's builder takes
  each row in ``append``.
* decode — from the batch's bytes: check the CRC, then read every record's offset,
  timestamp, key, value and headers.

Each figure is the median (min, max) over paired rounds of ours ÷ kafka-python records/s;
in each round both run for the same time, in alternating order (``bench/paired.py``).
Goal: >= 2x for each. Also prints the header-only scan rate log recovery uses (no peer).
"""
from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paired import figure, paired, print_figure, rate  # noqa: E402

from engine.records import CompressionType, SimpleRecord, build_batch, decode_batch, scan_valid  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)     # kafka-python's import-time protocol loader
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # noqa: E402

RECORDS_PER_BATCH = 100
VALUE_BYTES = 100
BASE_TS = 1_700_000_000_000
GOAL = 2.0


def make_rows():
    return [(b"key-%06d" % i, (b"value-%04d-" % i).ljust(VALUE_BYTES, b"x"), BASE_TS + i)
            for i in range(RECORDS_PER_BATCH)]


def contenders(codec: CompressionType, rows: list) -> dict:
    def ours_encode():
        return build_batch([SimpleRecord(v, k, ts) for k, v, ts in rows], compression=codec)

    def theirs_encode():
        builder = DefaultRecordBatchBuilder(2, int(codec), False, -1, -1, -1, 1 << 30)
        for i, (k, v, ts) in enumerate(rows):
            builder.append(i, timestamp=ts, key=k, value=v, headers=[])
        return builder.build()

    ours_raw = ours_encode()
    theirs_raw = bytes(theirs_encode())
    assert decode_batch(theirs_raw).compression == codec, "kafka-python fell back to no compression"
    assert [(r.key, r.value, r.timestamp) for r in decode_batch(theirs_raw)] == \
        [(r.key, r.value, r.timestamp) for r in decode_batch(ours_raw)], "the two encoders disagree"

    def ours_decode():
        for r in decode_batch(ours_raw).records:
            r.offset, r.timestamp, r.key, r.value, r.headers

    def theirs_decode():
        batch = DefaultRecordBatch(theirs_raw)
        if not batch.validate_crc():
            raise AssertionError("kafka-python says the CRC is wrong")
        for r in batch:
            r.offset, r.timestamp, r.key, r.value, r.headers

    return {"encode": (ours_encode, theirs_encode), "decode": (ours_decode, theirs_decode)}


def main(argv: list[str]) -> list:
    quick = "--quick" in argv
    rounds, min_seconds = (5, 0.05) if quick else (9, 0.15)
    rows = make_rows()
    print(f"[codec] record batch v2, {RECORDS_PER_BATCH} records/batch, 10-byte keys, {VALUE_BYTES}-byte values; "
          f"ours vs kafka-python, {rounds} paired rounds")
    figures = []
    for codec in (CompressionType.NONE, CompressionType.LZ4):
        for op, (ours, theirs) in contenders(codec, rows).items():
            t = paired({"ours": ours, "theirs": theirs}, rounds, min_seconds)
            ratios = [b / a for a, b in zip(t["ours"], t["theirs"])]
            ours_rate = sorted(rate(t["ours"], RECORDS_PER_BATCH))[rounds // 2]
            theirs_rate = sorted(rate(t["theirs"], RECORDS_PER_BATCH))[rounds // 2]
            print(f"  {codec.name.lower()} {op}: ours {ours_rate:,.0f} records/s, kafka-python {theirs_rate:,.0f} "
                  f"records/s (medians)")
            figures.append(print_figure(figure(f"{op} {codec.name.lower()} ours/kafka-python", ratios, "x",
                                               f">= {GOAL:.0f}x", at_least=GOAL)))
    log = b"".join(build_batch([SimpleRecord(v, k, ts) for k, v, ts in rows[:10]], base_offset=10 * i)
                   for i in range(10_000))
    start = time.perf_counter()
    result = scan_valid(log)
    elapsed = time.perf_counter() - start
    assert result.error is None and len(result.headers) == 10_000
    print(f"  scan_valid (recovery's header walk, CRC checked): {len(log) / 1e6:.1f} MB, 10,000 batches in "
          f"{elapsed * 1000:.1f} ms (no peer)")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
