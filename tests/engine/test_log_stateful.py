"""The real Log against a plain Python list of batches, with crash and reopen as rules."""
import shutil
import tempfile

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import SimpleRecord, build_batch

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=100, segment_index_bytes=64, retention_bytes=1200,
                   retention_ms=-1, file_delete_delay_ms=50, log_retention_check_interval_ms=700)


class LogMachine(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.tmp = tempfile.mkdtemp()
        self.disk = Disk(self.tmp)
        self.clock = VirtualClock(1000)
        self.scheduler = Scheduler(self.clock)
        self.events = EventLog(self.clock, keep=200)
        self.batches: list[list[tuple[int, bytes, int]]] = []   # the model: batches of (offset, value, ts)
        self.leo = 0
        self.start_offset = 0
        self.log = self._open(0, 0)

    def _open(self, recovery_point, log_start):
        return Log(self.disk, "t-0", "t", 0, CONFIG, self.scheduler, self.events, hw_follows_leo=True,
                   recovery_point=recovery_point, log_start_offset=log_start)

    def teardown(self):
        if hasattr(self, "disk"):
            self.disk.close_all()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _model_records(self):
        return [r for b in self.batches for r in b if r[0] >= self.start_offset]

    def _sync_start(self):
        assert self.log.log_start_offset >= self.start_offset or self.log.log_start_offset == self.leo
        self.start_offset = self.log.log_start_offset

    # ---- rules ---------------------------------------------------------------
    @rule(values=st.lists(st.binary(max_size=60), min_size=1, max_size=4), dt=st.integers(0, 50))
    def append(self, values, dt):
        self.scheduler.advance(dt)
        self._sync_start()
        ts = self.clock.now_ms()
        self.log.append_as_leader([SimpleRecord(v, timestamp=ts) for v in values], 0)
        self.batches.append([(self.leo + i, v, ts) for i, v in enumerate(values)])
        self.leo += len(values)

    @rule(batches=st.lists(st.lists(st.binary(max_size=80), min_size=1, max_size=3), min_size=1, max_size=6))
    def append_as_follower(self, batches):
        """Several batches in one call (a fetch response), written group by group."""
        self._sync_start()
        ts = self.clock.now_ms()
        data, offset = b"", self.leo
        for values in batches:
            data += build_batch([SimpleRecord(v, timestamp=ts) for v in values], base_offset=offset,
                                partition_leader_epoch=1)
            self.batches.append([(offset + i, v, ts) for i, v in enumerate(values)])
            offset += len(values)
        self.log.append_as_follower(data)
        self.leo = offset

    @precondition(lambda self: self.leo > self.start_offset)
    @rule(data=st.data())
    def read(self, data):
        target = data.draw(st.integers(self.start_offset, self.leo - 1))
        got = self.log.read(target, max_bytes=data.draw(st.integers(1, 500)))
        assert got.batches and got.batches[0].base_offset <= target <= got.batches[0].last_offset
        expected = next(b for b in self.batches if b[0][0] <= target <= b[-1][0])
        assert got.batches[0].base_offset == expected[0][0]

    @precondition(lambda self: self.leo > self.start_offset)
    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(self.start_offset, self.leo))
        self.log.truncate_to(target)
        while self.batches and self.batches[-1][-1][0] >= target:
            self.batches.pop()
        cut = self.batches[-1][-1][0] + 1 if self.batches else None
        if target < self.leo:
            self.leo = max(cut, self.log.active_segment.base_offset) if cut is not None else self.log.log_end_offset
        self.start_offset = min(self.start_offset, self.leo)

    @rule()
    def roll(self):
        self.log.roll()

    @rule(data=st.data())
    def retention(self, data):
        self.log.delete_records(data.draw(st.integers(self.start_offset, self.leo)))
        self.log.delete_old_segments()
        self._sync_start()

    @rule(ms=st.integers(0, 1000))
    def advance(self, ms):
        self.scheduler.advance(ms)
        self._sync_start()

    @rule()
    def close_and_reopen(self):
        self.log.close()
        self.log = self._open(self.log.recovery_point, self.log.log_start_offset)

    @rule()
    def crash_and_reopen(self):
        recovery_point, log_start = self.log.recovery_point, self.log.log_start_offset
        self.log.cancel_tasks()
        self.disk.crash()
        self.log = self._open(recovery_point, log_start)
        # everything below the recovery point was fsync'd; everything after it is lost
        while self.batches and self.batches[-1][-1][0] >= recovery_point:
            self.batches.pop()
        self.leo = recovery_point
        self.start_offset = min(self.start_offset, self.leo)

    # ---- invariants ----------------------------------------------------------
    @invariant()
    def offsets_match(self):
        if not hasattr(self, "log"):
            return
        log = self.log
        assert log.log_end_offset == self.leo
        assert log.log_start_offset == self.start_offset
        assert log.high_watermark == self.leo
        assert log.recovery_point <= log.log_end_offset

    @invariant()
    def records_match(self):
        if not hasattr(self, "log"):
            return
        got = [(r.offset, r.value or b"", r.timestamp) for r in self.log.records()]
        assert got == self._model_records()

    @invariant()
    def segments_are_consistent(self):
        if not hasattr(self, "log"):
            return
        segs = self.log.segments
        bases = [s.base_offset for s in segs]
        assert bases == sorted(set(bases)) and bases[0] <= self.log.log_start_offset or bases[0] == self.leo
        for s in segs:
            assert self.disk.size(s.log_rel) == s.size
            oi = s.offset_index
            assert oi.keys == sorted(set(oi.keys)) and all(p < s.size for p in oi.values)
        assert self.disk.size(segs[-1].offset_index.rel) == segs[-1].offset_index.max_size_bytes or \
            not self.log._tasks


LogMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=35, deadline=None)
TestLogMachine = LogMachine.TestCase
