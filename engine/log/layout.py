"""What is inside a segment, as plain data for the "inside a segment" diagram (lessons 3
and 4): every batch of the ``.log`` with its byte position, and every entry of the
``.index`` and ``.timeindex`` with what it points at. Read from the files the log wrote
(batch headers) and the index entries the log keeps, never reconstructed from events.
"""
from __future__ import annotations

from typing import Any

from .log_segment import LogSegment, segment_file_name

__all__ = ["segment_layout", "MAX_BATCHES"]

MAX_BATCHES = 400   # a diagram shows at most this many batches of one segment


def segment_layout(seg: LogSegment, *, max_batches: int = MAX_BATCHES) -> dict[str, Any]:
    """``{"base", "files", "size", "batches": [[position, base, last, max_ts, size], ...],
    "offset_index": [[relative, offset, position], ...], "time_index": [[timestamp, relative, offset], ...],
    "truncated"}``. Index entries are listed with their on-disk relative offset and the
    absolute offset a dump shows (base + relative)."""
    batches = []
    truncated = False
    for i, b in enumerate(seg.walk(0)):
        if i >= max_batches:
            truncated = True
            break
        batches.append(list(b))
    base = seg.base_offset
    oi, ti = seg.offset_index, seg.time_index
    return {
        "base": base,
        "files": {"log": segment_file_name(base), "index": segment_file_name(base, ".index"),
                  "timeindex": segment_file_name(base, ".timeindex")},
        "size": seg.size,
        "batches": batches,
        "offset_index": [[k - base, k, v] for k, v in zip(oi.keys, oi.values)],
        "time_index": [[k, v - base, v] for k, v in zip(ti.keys, ti.values)],
        "index_interval_bytes": seg.index_interval_bytes,
        "truncated": truncated,
    }
