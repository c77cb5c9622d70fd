"""cProfile summaries of the three hot paths the benchmarks time (not a benchmark: the
profiler slows everything; read it for *where* the time goes).

    python bench/profile_paths.py [append|lookup|rf3 ...] [--top 15]

* append — ``Log.append_as_follower`` of pre-encoded 16 KB batches, real EventLog;
* lookup — ``Log.read`` of one offset (traced and untraced) in a log of single-record batches;
* rf3    — 3 brokers, RF 3, acks=all produce of 10-record batches, clock +2 ms per request.

Prints the top functions by own time (tottime) per path.
"""
from __future__ import annotations

import cProfile
import io
import pstats
import random
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.clock import Scheduler, VirtualClock  # noqa: E402
from engine.cluster.cluster import Cluster  # noqa: E402
from engine.cluster.config import ClusterConfig  # noqa: E402
from engine.config import LogConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402
from engine.events import EventLog  # noqa: E402
from engine.log import Log  # noqa: E402
from engine.records import SimpleRecord, build_batch  # noqa: E402

TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None
_BASE = struct.Struct(">q")


def _copies(template: bytes, n: int, per: int = 1) -> list[bytes]:
    buf, out = bytearray(template), []
    for i in range(n):
        _BASE.pack_into(buf, 0, i * per)
        out.append(bytes(buf))
    return out


def _log(root: str) -> Log:
    clock = VirtualClock(0)
    return Log(Disk(root), "p-0", "p", 0, LogConfig(), Scheduler(clock), EventLog(clock), schedule_tasks=False)


def profile_append(prof: cProfile.Profile) -> str:
    template = build_batch([SimpleRecord(random.Random(1).randbytes(16384 - 80), timestamp=1)])
    batches = _copies(template, 4000)
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        log = _log(root)
        prof.enable()
        for b in batches:
            log.append_as_follower(b)
        prof.disable()
        log.disk.close_all()
    return f"{len(batches)} appends of {len(template)} B"


def profile_lookup(prof: cProfile.Profile, records: int = 200_000) -> str:
    template = build_batch([SimpleRecord(b"12345678", key=b"k", timestamp=1)])
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        log = _log(root)
        for first in range(0, records, 20000):
            buf = bytearray(template)
            chunk = []
            for i in range(first, first + 20000):
                _BASE.pack_into(buf, 0, i)
                chunk.append(bytes(buf))
            log.append_as_follower(b"".join(chunk))
        rng = random.Random(3)
        targets = [rng.randrange(records) for _ in range(2000)]
        prof.enable()
        for t in targets:
            log.read(t, max_bytes=1)
        for t in targets:
            log.read(t, max_bytes=1, trace=False)
        prof.disable()
        log.disk.close_all()
    return f"{len(targets)} traced + {len(targets)} untraced lookups in a {records}-record log"


def profile_rf3(prof: cProfile.Profile, requests: int = 500, sessions: bool = False, partitions: int = 1) -> str:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        cluster = Cluster(Disk(root), ClusterConfig(brokers=3, replica_fetch_sessions=sessions), seed=0)
        cluster.create_topic("t", partitions, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]] * partitions)
        cluster.advance(1000)
        values = [b"v" * 100] * 10
        prof.enable()
        for i in range(requests):
            cluster.produce("t", i % partitions, values, acks=-1)
            cluster.advance(2)
        while len(cluster.produce_results) < requests:
            cluster.advance(10)
        prof.disable()
        events = cluster.events.seq
    return f"{requests} acks=all requests of 10 records, {events} events in all"


def profile_rf3_sessions(prof: cProfile.Profile) -> str:
    return profile_rf3(prof, sessions=True) + " (follower fetch sessions)"


def profile_rf3x100(prof: cProfile.Profile) -> str:
    return profile_rf3(prof, partitions=100) + " over 100 partitions"


def profile_rf3x100_sessions(prof: cProfile.Profile) -> str:
    return profile_rf3(prof, partitions=100, sessions=True) + " over 100 partitions (follower fetch sessions)"


PATHS = {"append": profile_append, "lookup": profile_lookup, "rf3": profile_rf3, "rf3s": profile_rf3_sessions,
         "rf3x100": profile_rf3x100, "rf3x100s": profile_rf3x100_sessions}


def main(argv: list[str]) -> int:
    top = 15
    if "--top" in argv:
        top = int(argv[argv.index("--top") + 1])
        del argv[argv.index("--top"):argv.index("--top") + 2]
    for name in argv or list(PATHS):
        prof = cProfile.Profile()
        what = PATHS[name](prof)
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        print(f"== {name}: {what}; total {stats.total_tt:.3f} s under the profiler")
        stats.sort_stats("tottime").print_stats(top)
        lines = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        print("\n".join(line.replace(str(Path(__file__).resolve().parent.parent) + "/", "")
                        for line in lines[start:start + top + 1]))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
