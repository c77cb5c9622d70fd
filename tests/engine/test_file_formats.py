"""docs/file-formats.md is the one home of our byte layouts: these tests build each
layout from the doc's tables by hand (struct calls, not our encoders) and compare with
what the engine writes, and check that every test the doc names exists."""
from __future__ import annotations

import ast
import pathlib
import re
import struct

from crc32c import crc32c

from engine.cluster.transactions import TxnMetadata, encode_txn_key, encode_txn_value
from engine.group.offsets import OffsetKey, OffsetValue, encode_key, encode_value
from engine.log.producer_state import BatchMetadata, ProducerStateEntry, encode_snapshot
from engine.records import decode_batch
from engine.records.batch import build_end_txn_marker

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "file-formats.md"


def s16(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def test_every_test_the_doc_names_exists():
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", DOC.read_text())
    assert len(named) >= 10
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in defs, f"docs/file-formats.md names {path}::{name}, which does not exist"


def test_snapshot_entry_offsets_match_the_table():
    e = ProducerStateEntry(0x0102030405060708, 7, 11, 1234)
    e.current_txn_first_offset = 900
    e.batches.append(BatchMetadata(last_seq=42, last_offset=1000, offset_delta=3, timestamp=1234))
    data = encode_snapshot([e])
    entry = bytearray(46)
    for at, fmt, value in ((0, ">q", 0x0102030405060708), (8, ">h", 7), (10, ">i", 42), (14, ">q", 1000),
                           (22, ">i", 3), (26, ">q", 1234), (34, ">i", 11), (38, ">q", 900)):
        struct.pack_into(fmt, entry, at, value)
    tail = struct.pack(">i", 1) + bytes(entry)
    assert data == struct.pack(">hI", 1, crc32c(tail)) + tail


def test_marker_key_and_value_bytes():
    for commit, kind in ((False, 0), (True, 1)):
        batch = decode_batch(build_end_txn_marker(commit, 77, 3, 9, base_offset=5), 0)
        assert batch.is_control and batch.is_transactional and batch.base_sequence == -1
        (record,) = batch.records
        assert record.key == struct.pack(">hh", 0, kind)
        assert record.value == struct.pack(">hi", 0, 9)


def test_transaction_log_value_bytes():
    md = TxnMetadata("tx", 5, 1, 60000, "PrepareCommit", {("b", 2), ("a", 1), ("a", 0)}, 2000, 1500)
    assert encode_txn_key("tx") == struct.pack(">h", 0) + s16("tx")
    want = (struct.pack(">hqhib", 0, 5, 1, 60000, 2) + struct.pack(">i", 2)
            + s16("a") + struct.pack(">iii", 2, 0, 1) + s16("b") + struct.pack(">ii", 1, 2)
            + struct.pack(">qq", 2000, 1500))
    assert encode_txn_value(md) == want


def test_offset_commit_key_and_value_bytes():
    assert encode_key(OffsetKey("g", "in", 3)) == struct.pack(">h", 1) + s16("g") + s16("in") + struct.pack(">i", 3)
    assert encode_value(OffsetValue(42, -1, "m", 99)) == struct.pack(">hqi", 3, 42, -1) + s16("m") + \
        struct.pack(">q", 99)
