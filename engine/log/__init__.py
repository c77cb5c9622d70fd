"""One partition's log on disk, byte-compatible with Kafka: segments (``.log``), the offset
and time indexes, the leader-epoch cache and its checkpoint, retention and crash recovery."""
from engine.log.checkpoint import CheckpointFile
from engine.log.leader_epoch import EpochEntry, LeaderEpochFileCache
from engine.log.log import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LEADER_EPOCH_CHECKPOINT, MAX_TIMESTAMP,
                            FetchDataInfo, FileInfo, Log, LogAppendInfo)
from engine.log.log_segment import LogSegment, segment_file_name
from engine.log.offset_index import OffsetIndex, OffsetPosition
from engine.log.time_index import TimeIndex, TimestampOffset

__all__ = [
    "CheckpointFile", "EpochEntry", "LeaderEpochFileCache", "Log", "LogAppendInfo", "FetchDataInfo", "FileInfo",
    "LogSegment", "segment_file_name", "OffsetIndex", "OffsetPosition", "TimeIndex", "TimestampOffset",
    "LEADER_EPOCH_CHECKPOINT", "LATEST_TIMESTAMP", "EARLIEST_TIMESTAMP", "MAX_TIMESTAMP",
]
