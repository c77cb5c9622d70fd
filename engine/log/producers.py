"""The log's side of idempotence and transactions (a mixin of :class:`~engine.log.Log`).

Before a leader appends client batches that carry a producer id it runs the producer
checks of :mod:`engine.log.producer_state` (duplicate → answered with the original
offsets and nothing written; out of sequence, fenced epoch, non-transactional write in a
transaction → refused, nothing written). After any append (leader or follower) the
producer table follows the batches, COMMIT/ABORT markers close transactions and an
ABORT goes into the segment's ``.txnindex`` with the LSO of that moment.

State survives restarts the way Kafka keeps it: a ``<offset>.snapshot`` when a segment
rolls, then the batches after the newest usable snapshot are replayed on load and after
a truncation. (Kafka also snapshots an empty table on every roll; we write one only once
a producer id has been seen, so logs of plain producers keep the files the storage
lessons show.)
"""
from __future__ import annotations

import copy
from typing import Any

from ..records import ControlRecordType, build_end_txn_marker, decode_batch, read_end_txn_marker
from .producer_state import NO_SEQUENCE, ProducerStateManager
from .transaction_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex

__all__ = ["LogProducerState"]


class LogProducerState:
    """Mixed into Log: needs ``disk``, ``dir``, ``_segments``, ``log_start_offset``,
    ``high_watermark`` and ``_log_end_offset``."""

    producer_state: ProducerStateManager

    def _init_producer_state(self) -> None:
        self.producer_state = ProducerStateManager(self.disk, self.dir)

    # ---- before a leader append ----------------------------------------------
    def _check_producers(self, parsed: list) -> Any:
        """Run the client checks over ``parsed`` batches (offsets already assigned). Returns the
        original batch metadata when the (single) batch is a duplicate, else None; raises a
        Kafka-named error, leaving the table unchanged, when a batch is refused."""
        batches = [h for _, h in parsed if h.producer_id >= 0 and not h.is_control]
        if not batches:
            return None
        ps = self.producer_state
        if len(parsed) == 1:      # the produce path: one batch, checked without a scratch copy
            h = batches[0]
            dup = ps.check_duplicate(h.producer_id, h.producer_epoch, h.base_sequence,
                                     _last_seq(h.base_sequence, h.last_offset_delta))
            if dup is None:
                ps.validate(h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional, "client")
            return dup
        saved = (copy.deepcopy(ps.producers), dict(ps.ongoing), dict(ps.unreplicated), ps.map_end_offset)
        try:
            for h in batches:
                ps.validate(h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional, "client")
                # Later batches of the same request are checked against this one.
                ps.update(h.producer_id, h.producer_epoch, h.base_sequence,
                          _last_seq(h.base_sequence, h.last_offset_delta), h.base_offset,
                          h.base_offset + h.last_offset_delta, h.max_timestamp, h.is_transactional)
        finally:
            ps.producers, ps.ongoing, ps.unreplicated, ps.map_end_offset = saved
        return None

    def append_txn_marker(self, commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          leader_epoch: int) -> Any:
        """The leader writes a COMMIT or ABORT control batch (WriteTxnMarkers from the
        transaction coordinator). Refused with a Kafka-named error, writing nothing, when the
        epochs are stale."""
        ps = self.producer_state
        saved = (copy.deepcopy(ps.producers), dict(ps.ongoing), dict(ps.unreplicated), ps.map_end_offset)
        try:   # the same checks the append will apply, before anything is written
            ps.complete_txn(producer_id, producer_epoch, coordinator_epoch, commit, self._log_end_offset,
                            self._now(), "coordinator")
        finally:
            ps.producers, ps.ongoing, ps.unreplicated, ps.map_end_offset = saved
        data = build_end_txn_marker(commit, producer_id, producer_epoch, coordinator_epoch,
                                    base_offset=self._log_end_offset, now_ms=self._now(),
                                    partition_leader_epoch=leader_epoch)
        parsed = self._parse(data)
        info = self._append(data, parsed, self._now(), -1)
        self._track_producers(data, parsed, "coordinator")
        return info

    # ---- after any append --------------------------------------------------------
    def _track_producers(self, data: bytes, parsed: list, origin: str) -> None:
        ps = self.producer_state
        for pos, h in parsed:
            last = h.base_offset + h.last_offset_delta
            if h.producer_id < 0:
                ps.map_end_offset = last + 1
                continue
            if h.is_control:
                self._apply_marker(data, pos, h, origin)
                continue
            ps.update(h.producer_id, h.producer_epoch, h.base_sequence,
                      _last_seq(h.base_sequence, h.last_offset_delta), h.base_offset, last, h.max_timestamp,
                      h.is_transactional)

    def _apply_marker(self, data: bytes, pos: int, h: Any, origin: str, replay: bool = False) -> None:
        batch = decode_batch(data, pos, verify_crc=False)
        marker = read_end_txn_marker(batch.records[0]) if batch.records else None
        ps = self.producer_state
        if marker is None:      # another control type (KRaft): occupies its offset, nothing else
            ps.map_end_offset = h.base_offset + h.last_offset_delta + 1
            return
        done = ps.complete_txn(h.producer_id, h.producer_epoch, marker.coordinator_epoch,
                               marker.type == ControlRecordType.COMMIT,
                               h.base_offset, h.max_timestamp, origin)
        if done.is_aborted:
            seg = self._segment_holding(h.base_offset)
            index = TransactionIndex(self.disk, f"{self.dir}/{seg.base_offset:020d}{TXN_INDEX_SUFFIX}")
            # A replay (reopen, truncation) re-indexes only what a crash took from the .txnindex.
            if not replay or all(t.last_offset != done.last_offset for t in index.entries()):
                index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                        ps.lso_for_completed(done)))
        ps.on_high_watermark_updated(self.high_watermark)

    def _segment_holding(self, offset: int) -> Any:
        for seg in reversed(self._segments):
            if seg.base_offset <= offset:
                return seg
        return self._segments[0]

    # ---- the stable offset and aborted transactions ---------------------------------
    @property
    def last_stable_offset(self) -> int:
        """LSO: read_committed consumers read below it (reference §6.2)."""
        ps = self.producer_state
        ps.on_high_watermark_updated(self.high_watermark)
        return ps.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """What a read_committed fetch of ``[fetch_offset, upper_bound)`` must skip: walk the
        ``.txnindex`` files from the segment holding ``fetch_offset`` (reference §3.6)."""
        out: list[AbortedTxn] = []
        for seg in self._segments:
            nxt = seg.next_offset if seg is not self._segments[-1] else self._log_end_offset
            if nxt is not None and nxt <= fetch_offset and seg is not self._segments[-1]:
                continue
            index = TransactionIndex(self.disk, f"{self.dir}/{seg.base_offset:020d}{TXN_INDEX_SUFFIX}")
            found, complete = index.collect_aborted(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    # ---- snapshots, reload --------------------------------------------------------
    def _snapshot_producers_on_roll(self) -> None:
        ps = self.producer_state
        if ps.producers:
            ps.map_end_offset = self._log_end_offset
            ps.take_snapshot()

    def _reload_producer_state(self) -> None:
        """Load the newest snapshot at or below the LEO and replay the batches after it."""
        ps = self.producer_state
        start = ps.truncate_and_reload(self.log_start_offset, self._log_end_offset)
        start = self.log_start_offset if start is None else start
        for seg in self._segments:
            nxt = seg.next_offset if seg is not self._segments[-1] else self._log_end_offset
            if nxt is not None and nxt <= start and seg is not self._segments[-1]:
                continue
            data = None
            for pos, h in seg.iter_headers():
                last = h.base_offset + h.last_offset_delta
                if last < start:
                    continue
                if h.producer_id < 0:
                    ps.map_end_offset = last + 1
                    continue
                if h.is_control:
                    if data is None:
                        data = seg.read_all()
                    self._apply_marker(data, pos, h, "replication", replay=True)
                else:
                    ps.update(h.producer_id, h.producer_epoch, h.base_sequence,
                              _last_seq(h.base_sequence, h.last_offset_delta), h.base_offset, last,
                              h.max_timestamp, h.is_transactional)
        ps.map_end_offset = self._log_end_offset
        ps.on_high_watermark_updated(self.high_watermark)

    def _truncate_txn_indexes(self, offset: int) -> None:
        for seg in self._segments:
            index = TransactionIndex(self.disk, f"{self.dir}/{seg.base_offset:020d}{TXN_INDEX_SUFFIX}")
            if index.exists():
                index.truncate_to(offset)


def _last_seq(base_sequence: int, last_offset_delta: int) -> int:
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return (base_sequence + last_offset_delta) % 2**31
