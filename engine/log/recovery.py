"""Opening a log: what Kafka's ``LogLoader`` does at startup, as a mixin of :class:`Log`.

1. Finish or abandon an interrupted clean (``*.cleaned`` / ``*.swap``, see
   :func:`engine.log.cleaner.finish_interrupted_swaps`), then remove leftovers: ``*.deleted``
   (deletion was scheduled), ``*.tmp`` (a half-written checkpoint), and index files without a ``.log``.
2. Load segments from the ``.log`` file names (20-digit base offsets).
3. After a clean shutdown nothing is re-read: the active segment's end comes from its batch
   headers and every index is loaded. Otherwise every segment holding offsets at or after
   the recovery point is re-read batch by batch (CRC checked); a torn or corrupt tail is cut
   and every later segment deleted; its indexes are rebuilt with the append rule. Segments below the recovery point keep their indexes unless
   an index is missing, has a length that is not a multiple of its entry size, is not strictly
   increasing, or points past the log — then it is rebuilt too.
4. The leader-epoch cache is reloaded from its checkpoint (and from the recovered batches) and
   truncated to the log end offset; the active segment's indexes are preallocated again.

Kafka recovers only at broker start. A tool that is handed a directory opens it with
``Log(..., recover=False)``: :func:`check_log_dir` first reads everything recovery would
change, and the first thing it would change (a torn or corrupt batch, an index that fails
its sanity check, a leftover, a checkpoint or snapshot beyond the log end) is raised as an
error naming the file and the position, before a byte is written. With nothing to recover
the log is then opened as after a clean shutdown.
"""
from __future__ import annotations

from ..errors import (CorruptCheckpointError, CorruptIndexError, CorruptRecordError, CorruptSnapshotError,
                      KafkaError, KafkaStorageError)
from .checkpoint import CheckpointFile
from .cleaner import finish_interrupted_swaps
from .events import IndexRebuilt, LeftoverRemoved, RecoveryFinished, RecoveryStarted, RecoveryTruncated
from .log_segment import LogSegment
from .producer_state import SNAPSHOT_SUFFIX, decode_snapshot
from .transaction_index import TransactionIndex

__all__ = ["LogRecovery", "LEFTOVER_SUFFIXES", "check_log_dir", "check_unrepairable", "check_before_opening"]

LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp")


def _base_of(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def check_unrepairable(disk, d: str) -> None:
    """Read-only: raise for what recovery cannot repair either, so a tool refuses it before it
    writes anything even with ``--recover``: a leader-epoch checkpoint that does not parse
    (:class:`CorruptCheckpointError`) or a ``.txnindex`` that does not (:class:`CorruptIndexError`)."""
    try:
        CheckpointFile(disk, f"{d}/leader-epoch-checkpoint", (int, int)).read()
    except CorruptCheckpointError as exc:
        raise CorruptCheckpointError(f"{d}/{exc}") from None
    for name in disk.listdir(d):
        if name.endswith(".txnindex") and _base_of(name) is not None:
            TransactionIndex(disk, f"{d}/{name}").sanity_check()


def check_before_opening(disk, d: str, config, *, recover: bool) -> None:
    """What a tool runs before it opens ``d``: :func:`check_log_dir` (or, when the user asked for
    recovery, :func:`check_unrepairable`), its error saying that nothing was changed and, when
    it is so, that ``--recover`` would repair the log."""
    try:
        if recover:
            check_unrepairable(disk, d)
        else:
            check_log_dir(disk, d, config)
    except KafkaError as exc:
        hint = " (--recover repairs it as a broker start would)" if getattr(exc, "needs_recovery", False) else ""
        raise type(exc)(f"{exc}; nothing was changed{hint}") from None


def _needs_recovery(exc: Exception) -> Exception:
    exc.needs_recovery = True  # type: ignore[attr-defined]  # a tool can say that --recover would repair it
    return exc


def check_log_dir(disk, d: str, config, log_start_offset: int | None = None) -> int:
    """Read-only: raise what opening ``d`` would have to repair, naming the file and position.

    :class:`CorruptRecordError` for a torn or corrupt batch (or offsets out of order),
    :class:`CorruptIndexError` for an index that is missing or fails its sanity check,
    :class:`CorruptSnapshotError` for a snapshot that does not parse or lies outside the log,
    :class:`KafkaStorageError` for leftovers recovery would delete; each with
    ``needs_recovery = True``. What recovery cannot repair either is raised first
    (:func:`check_unrepairable`). Returns the log end offset. Nothing is written, even the
    directory is not created."""
    check_unrepairable(disk, d)
    try:
        return _check_repairable(disk, d, config, log_start_offset)
    except KafkaError as exc:
        raise _needs_recovery(exc) from None


def _check_repairable(disk, d: str, config, log_start_offset: int | None) -> int:
    names = disk.listdir(d)
    bases = sorted(b for n in names if n.endswith(".log") and (b := _base_of(n)) is not None)
    for name in names:
        if name.endswith(LEFTOVER_SUFFIXES):
            raise KafkaStorageError(f"{d}/{name}: left over from an interrupted clean, deletion or checkpoint "
                                    "write; recovery would remove it")
        if name.endswith((".index", ".timeindex")) and _base_of(name) is not None and _base_of(name) not in bases:
            raise CorruptIndexError(f"{d}/{name}: an index without its .log segment; recovery would remove it")
    end = log_start_offset or 0
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        seg = LogSegment.open(disk, d, base, config)
        data = disk.read(seg.log_rel, 0, seg.size)
        headers, valid, error = seg.scan(data, nxt)
        if valid < len(data):
            raise CorruptRecordError(f"{seg.log_rel}: {error or 'invalid bytes'}; recovery would cut the "
                                     f"{len(data) - valid} bytes from position {valid} (of {len(data)})")
        seg_end = headers[-1][1].base_offset + headers[-1][1].last_offset_delta + 1 if headers else base
        try:
            seg.offset_index.load()
            seg.offset_index.sanity_check(seg.size)
            seg.time_index.load()
            seg.time_index.sanity_check(nxt if nxt is not None else seg_end)
        except CorruptIndexError as exc:
            raise CorruptIndexError(f"{d}/{exc}; recovery would rebuild it") from None
        end = max(end, seg_end, base)
    start_offset = max(bases[0] if bases else 0, log_start_offset or 0)
    epochs = CheckpointFile(disk, f"{d}/leader-epoch-checkpoint", (int, int)).read()
    for n, (epoch, start) in enumerate(epochs):
        if start >= end or (n == 0 and start < start_offset):
            raise KafkaStorageError(f"{d}/leader-epoch-checkpoint: epoch {epoch} starts at offset {start}, outside "
                                    f"the log [{start_offset}, {end}); recovery would rewrite it")
    for name in names:
        stem, _, suffix = name.partition(".")
        if "." + suffix != SNAPSHOT_SUFFIX or len(stem) != 20 or not stem.isdigit():
            continue
        if not start_offset <= int(stem) <= end:
            raise CorruptSnapshotError(f"{d}/{name}: a snapshot outside the log [{start_offset}, {end}]; "
                                       "recovery would delete it")
        decode_snapshot(disk.read_all(f"{d}/{name}"), f"{d}/{name}")
    return end


class LogRecovery:
    """Mixin of :class:`engine.log.log.Log`: ``_load`` runs at construction."""

    def _load(self, recovery_point: int, log_start_offset: int | None, high_watermark: int | None) -> None:
        disk, d, ident, now = self.disk, self.dir, self._ident, self._now()
        if not self._recover_on_open:
            check_log_dir(disk, d, self.config, log_start_offset)  # raises before anything is written
            self.had_clean_shutdown = True  # nothing to recover: open as Kafka does after a clean shutdown
        disk.mkdir(d)
        finish_interrupted_swaps(disk, d, self._emit, ident)  # cleaner leftovers, as Kafka's LogLoader
        names = disk.listdir(d)
        bases = sorted(b for n in names if n.endswith(".log") and (b := _base_of(n)) is not None)
        self._emit(RecoveryStarted(*ident, recovery_point, bases))
        for name in names:
            orphan = (name.endswith((".index", ".timeindex")) and _base_of(name) is not None
                      and _base_of(name) not in bases)
            if name.endswith(LEFTOVER_SUFFIXES) or orphan:
                disk.delete(f"{d}/{name}")
                self._emit(LeftoverRemoved(*ident, name))
        cache = self.leader_epoch_cache
        segments: list[LogSegment] = []
        for i, base in enumerate(bases):
            seg = LogSegment.open(disk, d, base, self.config, created_ms=now)
            segments.append(seg)
            nxt = bases[i + 1] if i + 1 < len(bases) else None
            truncated = False
            clean = getattr(self, "had_clean_shutdown", False)
            if nxt is None and clean:
                truncated = self._load_clean_active(seg)
            elif not clean and (nxt is None or nxt > recovery_point):
                truncated = self._recover_segment(seg, nxt, "unflushed: at or after the recovery point")
            else:
                try:
                    seg.load_indexes(nxt)
                    seg.next_offset = nxt
                    seg.last_modified_ms = now
                except CorruptIndexError as exc:
                    truncated = self._recover_segment(seg, nxt, str(exc))
            if truncated:
                for later in bases[i + 1:]:
                    for suffix in (".log", ".index", ".timeindex"):
                        name = f"{later:020d}{suffix}"
                        if disk.delete(f"{d}/{name}"):
                            self._emit(LeftoverRemoved(*ident, name))
                break
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        if segments and log_start_offset is not None and log_start_offset > max(segments[-1].next_offset,
                                                                                 segments[-1].base_offset):
            # The log start offset was checkpointed beyond what survived: start empty there.
            for seg in list(segments):
                self._remove_segment(seg, "recovery: log start offset beyond the log end")
        if not self._segments:
            self._new_segment(log_start_offset or 0)
        else:
            self._segments[-1].on_become_active()
        active = self._segments[-1]
        self._log_end_offset = max(active.next_offset, active.base_offset)
        leo = self._log_end_offset
        start = max(self._segments[0].base_offset, log_start_offset or 0)
        self.log_start_offset = min(start, leo)
        if self.hw_follows_leo:
            self.high_watermark = leo
        else:
            hw = self.log_start_offset if high_watermark is None else high_watermark
            self.high_watermark = min(max(hw, self.log_start_offset), leo)
        cache.truncate_from_end(leo)
        cache.truncate_from_start(self.log_start_offset)
        self.recovery_point = min(max(recovery_point, self._segments[0].base_offset), leo)
        self.flush()
        self._emit(RecoveryFinished(*ident, self.log_start_offset, leo, list(self._bases)))

    def _load_clean_active(self, seg: LogSegment) -> bool:
        """After a clean shutdown Kafka recovers nothing: the active segment's end is read from
        its batch headers and its (trimmed) indexes are loaded; only if they fail the sanity
        check is the segment recovered after all."""
        try:
            seg.reload_stats()
            seg.load_indexes(seg.next_offset)
            seg.last_modified_ms = self._now()
            return False
        except (CorruptIndexError, CorruptRecordError) as exc:
            return self._recover_segment(seg, None, str(exc))

    def _recover_segment(self, seg: LogSegment, next_base: int | None, reason: str) -> bool:
        """Re-read ``seg``, cut an invalid tail, rebuild its indexes. True if bytes were cut."""
        before = self.disk.size(seg.log_rel)
        result = seg.recover(self._now(), next_base)
        ident = self._ident
        if result.truncated_bytes:
            self._emit(RecoveryTruncated(*ident, seg.base_offset, before, result.valid_bytes,
                                         result.error or "invalid bytes"))
        for idx in (seg.offset_index, seg.time_index):
            self._emit(IndexRebuilt(*ident, seg.base_offset, idx.KIND, idx.entries, reason))
        cache = self.leader_epoch_cache
        for _, h in result.headers:
            epoch = h.partition_leader_epoch
            if epoch >= 0 and (cache.latest_epoch is None or epoch > cache.latest_epoch):
                cache.assign(epoch, h.base_offset)
        seg.flush()  # what was re-read and rebuilt is now the durable state
        return result.truncated_bytes > 0
