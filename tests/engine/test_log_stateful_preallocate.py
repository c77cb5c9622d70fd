"""The stateful log machine of test_log_stateful.py with ``preallocate=true``: the active
.log is segment.bytes long, batches go into its zeros, roll and close trim it, a clean close
reopens without recovery, and a crash still loses exactly what was not flushed."""
from hypothesis import settings
from hypothesis.stateful import invariant, rule

from engine.log import Log
from test_log_stateful import CONFIG, LogMachine

PREALLOCATED = CONFIG.replace(preallocate=True)


class PreallocatedLogMachine(LogMachine):
    def _open(self, recovery_point, log_start, clean=False):
        return Log(self.disk, "t-0", "t", 0, PREALLOCATED, self.scheduler, self.events, hw_follows_leo=True,
                   recovery_point=recovery_point, log_start_offset=log_start, clean_shutdown=clean)

    @rule()
    def close_and_reopen(self):
        self.log.close()
        self.log = self._open(self.log.recovery_point, self.log.log_start_offset, clean=True)

    @invariant()
    def segments_are_consistent(self):
        if not hasattr(self, "log"):
            return
        segs = self.log.segments
        for s in segs[:-1]:
            assert self.disk.size(s.log_rel) == s.size              # trimmed when it rolled
        active = segs[-1]
        assert self.disk.size(active.log_rel) >= active.size
        assert self.disk.read(active.log_rel, active.size, 64).strip(b"\0") == b""   # zeros after the data
        for s in segs:
            oi = s.offset_index
            assert oi.keys == sorted(set(oi.keys)) and all(p < s.size for p in oi.values)


PreallocatedLogMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=30, deadline=None)
TestPreallocatedLogMachine = PreallocatedLogMachine.TestCase
