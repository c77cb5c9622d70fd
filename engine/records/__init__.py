"""Kafka's record batch v2 format (magic 2): the batch codec and its control records
(``batch``), the record-section codecs (``compression``) and ZigZag varints (``varint``)."""
from engine.records.batch import (
    BATCH_OVERHEAD, LOG_OVERHEAD, MAGIC, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, BatchHeader, CompressionType, ControlRecordType, EndTransactionMarker, Header, Record,
    RecordBatch, RecordsSummary, SimpleRecord, TimestampType, ValidPrefix, build_batch, build_end_txn_marker,
    decode_batch, encode_batch, iter_batches, read_end_txn_marker, read_header, scan_valid, verify_crc,
    walk_records, whole_batch_header, whole_batch_values, with_log_append_time, with_offset_and_epoch,
)

__all__ = [
    "BATCH_OVERHEAD", "LOG_OVERHEAD", "MAGIC", "NO_PARTITION_LEADER_EPOCH", "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID", "NO_SEQUENCE", "BatchHeader", "CompressionType", "ControlRecordType",
    "EndTransactionMarker", "Header", "Record", "RecordBatch", "RecordsSummary", "SimpleRecord", "TimestampType",
    "ValidPrefix", "build_batch", "build_end_txn_marker", "decode_batch", "encode_batch", "iter_batches",
    "read_end_txn_marker", "read_header", "scan_valid", "verify_crc", "walk_records", "whole_batch_header", "whole_batch_values",
    "with_log_append_time", "with_offset_and_epoch",
]
