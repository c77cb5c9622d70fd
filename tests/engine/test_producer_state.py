"""Producer state: the idempotent producer's checks, transactions, LSO and .snapshot files.

Seed 003 (interview questions on exactly-once): the broker de-duplicates a retried batch by
(producer id, epoch, sequence) and keeps the last five batches per producer, which is why an
idempotent producer allows at most five requests in flight.
"""
from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.disk import Disk
from engine.errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from engine.log.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
    snapshot_name,
)


@pytest.fixture
def psm(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("t-0")
    return ProducerStateManager(disk, "t-0")


def append(psm, pid, epoch, first_seq, count, first_offset, ts=1000, txn=False, origin="client"):
    """What the log does for one batch: duplicate check, validation, update."""
    dup = psm.check_duplicate(pid, epoch, first_seq, first_seq + count - 1) if origin == "client" else None
    if dup is not None:
        return ("duplicate", dup.first_offset)
    psm.validate(pid, epoch, first_seq, txn, origin)
    psm.update(pid, epoch, first_seq, first_seq + count - 1, first_offset, first_offset + count - 1, ts, txn)
    return ("appended", first_offset)


def test_seed_003_a_retried_batch_is_answered_with_its_original_offsets(psm):
    assert append(psm, 7, 0, 0, 3, 0) == ("appended", 0)
    assert append(psm, 7, 0, 3, 2, 3) == ("appended", 3)
    # The response to the first request was lost; the producer retries it.
    assert append(psm, 7, 0, 0, 3, 5) == ("duplicate", 0)
    assert psm.map_end_offset == 5


def test_seed_003_only_the_last_five_batches_are_remembered(psm):
    for i in range(NUM_BATCHES_TO_RETAIN + 1):
        append(psm, 7, 0, i, 1, i)
    # Batch 0 fell out of the window: its retry is no longer recognised, and out of sequence.
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 7, 0, 0, 1, 6)
    assert append(psm, 7, 0, 1, 1, 6) == ("duplicate", 1)


def test_a_gap_in_sequences_is_out_of_order_and_changes_nothing(psm):
    append(psm, 7, 0, 0, 2, 0)
    before = psm.state()
    with pytest.raises(OutOfOrderSequenceError) as err:
        append(psm, 7, 0, 5, 1, 2)
    assert err.value.code == 45 and "expected sequence 2" in str(err.value)
    assert psm.state() == before


def test_an_older_epoch_is_fenced_and_a_new_epoch_must_start_at_zero(psm):
    append(psm, 7, 1, 0, 1, 0)
    with pytest.raises(InvalidProducerEpochError):
        append(psm, 7, 0, 1, 1, 1)
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 7, 2, 4, 1, 1)
    assert append(psm, 7, 2, 0, 1, 1) == ("appended", 1)
    assert psm.producers[7].producer_epoch == 2


def test_sequences_wrap_at_int32_max(psm):
    append(psm, 7, 0, 2**31 - 1, 1, 0)
    assert append(psm, 7, 0, 0, 1, 1) == ("appended", 1)


def test_replicated_batches_skip_sequence_checks(psm):
    append(psm, 7, 0, 0, 1, 0)
    assert append(psm, 7, 0, 9, 1, 1, origin="replication") == ("appended", 1)


def test_a_transaction_holds_the_lso_until_its_marker_is_below_the_hw(psm):
    append(psm, 7, 0, 0, 2, 10, txn=True)
    assert psm.first_unstable_offset() == 10
    assert psm.last_stable_offset(hw=12) == 10
    with pytest.raises(InvalidTxnStateError):
        append(psm, 7, 0, 2, 1, 12)              # non-transactional write inside a transaction
    done = psm.complete_txn(7, 0, coordinator_epoch=3, is_commit=False, marker_offset=12, timestamp=2000)
    assert (done.first_offset, done.last_offset, done.is_aborted) == (10, 12, True)
    assert psm.last_stable_offset(hw=12) == 10   # marker not yet replicated
    psm.on_high_watermark_updated(13)
    assert psm.last_stable_offset(hw=13) == 13
    with pytest.raises(TransactionCoordinatorFencedError):
        psm.complete_txn(7, 0, coordinator_epoch=2, is_commit=True, marker_offset=13, timestamp=2001)


def test_the_lso_recorded_for_an_abort_is_the_oldest_other_open_transaction(psm):
    append(psm, 7, 0, 0, 1, 0, txn=True)
    append(psm, 8, 0, 0, 1, 1, txn=True)
    done = psm.complete_txn(8, 0, 0, is_commit=False, marker_offset=2, timestamp=0)
    assert psm.lso_for_completed(done) == 0
    done7 = psm.complete_txn(7, 0, 0, is_commit=False, marker_offset=3, timestamp=0)
    assert psm.lso_for_completed(done7) == 4


def test_snapshot_bytes_follow_kafkas_layout(psm):
    append(psm, 1000, 2, 0, 3, 40, ts=1_700_000_000_123)
    append(psm, 1000, 2, 3, 2, 43, ts=1_700_000_000_456, txn=True)
    name = psm.take_snapshot()
    assert name == "00000000000000000045.snapshot" == snapshot_name(45)
    data = psm.disk.read_all(f"t-0/{name}")
    assert len(data) == 2 + 4 + 4 + 46
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1) and crc == crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (1000, 2, 4, 44, 1, 1_700_000_000_456, -1, 43)


def test_reload_keeps_state_up_to_the_snapshot_and_drops_ones_past_the_log_end(psm):
    append(psm, 7, 0, 0, 5, 0)
    psm.take_snapshot()                          # at 5
    append(psm, 7, 0, 5, 5, 5)
    psm.take_snapshot()                          # at 10
    assert psm.snapshot_offsets() == [5, 10]
    assert psm.truncate_and_reload(0, 7) == 5    # the log was truncated to 7
    assert psm.snapshot_offsets() == [5]
    assert psm.producers[7].last_seq == 4 and psm.map_end_offset == 5


def test_a_corrupt_snapshot_is_deleted_and_an_older_one_used(psm):
    append(psm, 7, 0, 0, 1, 0)
    psm.take_snapshot()
    append(psm, 7, 0, 1, 1, 1)
    name = psm.take_snapshot()
    raw = bytearray(psm.disk.read_all(f"t-0/{name}"))
    raw[-1] ^= 0xFF
    psm.disk.write_atomic(f"t-0/{name}", bytes(raw))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(raw))
    assert psm.truncate_and_reload(0, 100) == 1
    assert psm.snapshot_offsets() == [1]


def test_producers_expire_after_producer_id_expiration_unless_a_transaction_is_open(psm):
    append(psm, 7, 0, 0, 1, 0, ts=0)
    append(psm, 8, 0, 0, 1, 1, ts=0, txn=True)
    assert psm.remove_expired_producers(86_400_000) == [7]
    assert set(psm.producers) == {8}


entries = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1),
                             st.integers(0, 2**40), st.integers(0, 1000), st.integers(-1, 2**45),
                             st.integers(-1, 2**31 - 1), st.one_of(st.none(), st.integers(0, 2**40))),
                   max_size=20, unique_by=lambda e: e[0])


@settings(max_examples=200, deadline=None)
@given(entries)
def test_snapshots_round_trip(rows):
    from engine.log.producer_state import BatchMetadata, ProducerStateEntry
    table = []
    for pid, epoch, last_seq, last_off, delta, ts, coord, txn in rows:
        e = ProducerStateEntry(pid, epoch, coord, ts, txn)
        e.batches.append(BatchMetadata(last_seq, last_off + delta, delta, ts))
        table.append(e)
    back = decode_snapshot(encode_snapshot(table))
    assert [(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.current_txn_first_offset, list(e.batches))
            for e in back] == [(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.current_txn_first_offset,
                                list(e.batches)) for e in table]
