"""Sandboxes' disk use is honest: the quota counts preallocated bytes, and what it counts is
what ``du`` reports (allocated blocks), not 10 MiB index files that are mostly holes."""
from __future__ import annotations

import os

from engine.storage_commands import Advance, Produce
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import ReplicationSandbox
from kafkaviz.live.storage_kinds import SegmentsSandbox


def segments_box(path):
    return SegmentsSandbox(path, seed=1, limits=Limits(1000, 5 << 20), lesson=load_content("segments"))


def du_bytes(root) -> int:
    """``du -s --block-size=1`` below ``root`` (not counting ``root`` itself)."""
    total = 0
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def apparent_bytes(root) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files)


def test_segments_quota_equals_du_after_producing(tmp_path):
    box = segments_box(tmp_path / "box")
    try:
        for i in range(12):
            box.produce(Produce(partition=i % 2, count=5, value_size=120, key="k"))
            box.advance(Advance(ms=1000))
        assert len(box.logs[0].segments) >= 3          # rolls happened: fresh preallocated indexes exist
        quota = box.state()["disk_bytes"]
        assert quota == box.disk.usage_bytes()
        assert abs(quota - du_bytes(tmp_path / "box")) <= 4096, (quota, du_bytes(tmp_path / "box"))
        assert quota >= apparent_bytes(tmp_path / "box")   # preallocated bytes are counted
    finally:
        box.close()


def test_segments_quota_counts_the_preallocated_active_indexes(tmp_path):
    box = segments_box(tmp_path / "box")
    try:
        seg = box.logs[0].active_segment
        assert box.disk.size(seg.offset_index.rel) == 1024          # preallocated, no entry yet
        st = os.stat(box.disk.path(seg.offset_index.rel))
        assert st.st_blocks * 512 >= 1024                          # and really allocated
    finally:
        box.close()


def test_replication_run_is_not_tens_of_mib_of_holes(tmp_path):
    kind = ReplicationSandbox(tmp_path / "box", seed=7, limits=Limits(100, 10**7),
                              lesson=load_content("leader-epoch"))
    try:
        while kind.run.position < len(kind.run.log):
            kind.step()
        root = tmp_path / "box"
        assert apparent_bytes(root) < 256 * 1024, apparent_bytes(root)
        assert apparent_bytes(root) - du_bytes(root) < 64 * 1024
    finally:
        kind.close() if hasattr(kind, "close") else None
