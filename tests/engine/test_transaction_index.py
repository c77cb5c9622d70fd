"""The .txnindex: Kafka's 34-byte aborted-transaction entries and the read_committed query."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.disk import Disk
from engine.errors import CorruptIndexError
from engine.log.transaction_index import AbortedTxn, TransactionIndex


@pytest.fixture
def index(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("t-0")
    return TransactionIndex(disk, "t-0/00000000000000000000.txnindex")


def test_the_file_is_created_only_by_the_first_abort_and_holds_34_byte_entries(index):
    assert not index.exists() and index.entries() == []
    index.append(AbortedTxn(producer_id=4000, first_offset=3, last_offset=9, last_stable_offset=10))
    data = index.disk.read_all(index.rel)
    assert data == struct.pack(">hqqqq", 0, 4000, 3, 9, 10) and len(data) == 34


def test_collect_aborted_returns_overlapping_transactions_and_stops_at_the_upper_bound(index):
    index.append(AbortedTxn(1, 0, 4, 5))
    index.append(AbortedTxn(2, 6, 8, 9))
    index.append(AbortedTxn(3, 10, 14, 20))
    found, complete = index.collect_aborted(fetch_offset=5, upper_bound=12)
    assert [t.producer_id for t in found] == [2, 3] and complete is True
    found, complete = index.collect_aborted(fetch_offset=0, upper_bound=50)
    assert len(found) == 3 and complete is False


def test_entries_must_be_in_order_and_truncation_drops_later_markers(index):
    index.append(AbortedTxn(1, 0, 4, 5))
    with pytest.raises(CorruptIndexError):
        index.append(AbortedTxn(2, 1, 3, 5))
    index.append(AbortedTxn(2, 5, 7, 8))
    index.truncate_to(6)
    assert index.entries() == [AbortedTxn(1, 0, 4, 5)]


def test_a_torn_file_is_reported_as_corrupt(index):
    index.append(AbortedTxn(1, 0, 4, 5))
    index.disk.append(index.rel, b"\x00" * 5)
    with pytest.raises(CorruptIndexError):
        index.entries()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(1, 50), st.integers(0, 30)), max_size=15),
       st.integers(0, 3000), st.integers(0, 3000))
def test_collect_matches_a_plain_filter(tmp_path_factory, spans, fetch, bound):
    disk = Disk(tmp_path_factory.mktemp("txn"))
    disk.mkdir("p")
    idx = TransactionIndex(disk, "p/0.txnindex")
    last, entries = 0, []
    for pid, length, lag in spans:
        first = last + 1
        last = first + length
        entry = AbortedTxn(pid, first, last, last + 1 + lag)
        idx.append(entry)
        entries.append(entry)
    found, complete = idx.collect_aborted(fetch, bound)
    expected = []
    for e in entries:
        if e.last_offset >= fetch and e.first_offset < bound:
            expected.append(e)
        if e.last_stable_offset >= bound:
            break
    assert found == expected
