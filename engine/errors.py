"""The engine's exceptions, named as Kafka names them, each carrying the values that
caused it. Operating errors (bad input, corrupt files, a crashed broker) are these;
programmer errors are assertions.

    KafkaError                              code: Kafka's error code where one exists
    ├── InvalidTopicError                   (17) a topic name outside [a-zA-Z0-9._-]{1,249}, or "." / ".."
    ├── InvalidConfigError                  (40) unknown config key, wrong type, out of range
    ├── InvalidRequestError                 (42) a malformed or impossible command
    ├── CorruptRecordError                  (2)  bad CRC, magic, length or truncation in a batch
    ├── InvalidRecordError                  (87) a batch the leader refuses (empty, bad counts)
    ├── InvalidTimestampError               (32) a CreateTime timestamp outside message.timestamp.*.max.ms
    ├── RecordTooLargeError                 (10) larger than max.message.bytes / segment.bytes
    ├── OffsetOutOfRangeError               (1)  an offset outside [log start offset, log end offset]
    ├── UnknownTopicOrPartitionError        (3)
    ├── LeaderNotAvailableError             (5)
    ├── NotLeaderOrFollowerError            (6)
    ├── RequestTimedOutError                (7)
    ├── NotEnoughReplicasError              (19)
    ├── NotEnoughReplicasAfterAppendError   (20)
    ├── OutOfOrderSequenceError             (45) an idempotent producer's batch out of sequence
    ├── InvalidProducerEpochError           (47) a producer epoch older than the current one (fenced)
    ├── InvalidTxnStateError                (48) a transactional call in the wrong state
    ├── TransactionCoordinatorFencedError   (52) a marker from an older coordinator epoch
    ├── BrokerNotAvailableError             (8)
    ├── CoordinatorLoadInProgressError      (14) a broker waiting for its next producer-id block (KIP-730)
    └── KafkaStorageError                   (56) file-system trouble
        ├── CorruptIndexError                    an index whose entries are not ordered or point past the log
        ├── CorruptCheckpointError               a checkpoint file that does not parse
        ├── CorruptSnapshotError                 a producer-state snapshot that does not parse
        └── PathEscapeError                      a path that would leave the data directory
"""
from __future__ import annotations

__all__ = [
    "KafkaError", "InvalidTopicError", "InvalidConfigError", "InvalidRequestError",
    "CorruptRecordError", "InvalidRecordError", "InvalidTimestampError", "RecordTooLargeError", "OffsetOutOfRangeError",
    "UnknownTopicOrPartitionError", "LeaderNotAvailableError", "NotLeaderOrFollowerError",
    "RequestTimedOutError", "NotEnoughReplicasError", "NotEnoughReplicasAfterAppendError",
    "BrokerNotAvailableError", "KafkaStorageError", "CorruptIndexError", "CorruptCheckpointError",
    "PathEscapeError", "OutOfOrderSequenceError", "InvalidProducerEpochError", "InvalidTxnStateError",
    "TransactionCoordinatorFencedError", "CorruptSnapshotError", "CoordinatorLoadInProgressError",
]


class KafkaError(Exception):
    """Base of every engine error. ``code`` is Kafka's numeric error code (or None)."""

    code: int | None = None
    name: str = "UNKNOWN_SERVER_ERROR"

    def to_dict(self) -> dict:
        return {"error": type(self).__name__, "code": self.code, "name": self.name, "message": str(self)}


class InvalidTopicError(KafkaError):
    code, name = 17, "INVALID_TOPIC_EXCEPTION"


class InvalidConfigError(KafkaError):
    code, name = 40, "INVALID_CONFIG"


class InvalidRequestError(KafkaError):
    code, name = 42, "INVALID_REQUEST"


class CorruptRecordError(KafkaError):
    code, name = 2, "CORRUPT_MESSAGE"


class InvalidRecordError(KafkaError):
    code, name = 87, "INVALID_RECORD"


class InvalidTimestampError(KafkaError):
    code, name = 32, "INVALID_TIMESTAMP"


class RecordTooLargeError(KafkaError):
    code, name = 10, "MESSAGE_TOO_LARGE"


class RecordBatchTooLargeError(RecordTooLargeError):
    """Records larger than a whole segment (Kafka's ``RecordBatchTooLargeException`` from
    ``UnifiedLog.append``: more than ``segment.bytes``), where ``MESSAGE_TOO_LARGE`` is a batch
    over ``max.message.bytes``."""
    code, name = 18, "RECORD_LIST_TOO_LARGE"


class OffsetOutOfRangeError(KafkaError):
    code, name = 1, "OFFSET_OUT_OF_RANGE"

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int, where: str = "") -> None:
        self.offset, self.log_start_offset, self.log_end_offset = offset, log_start_offset, log_end_offset
        at = f" of {where}" if where else ""
        super().__init__(
            f"offset {offset} is out of range{at}: the log holds [{log_start_offset}, {log_end_offset}) "
            f"(log start offset {log_start_offset}, log end offset {log_end_offset})")


class UnknownTopicOrPartitionError(KafkaError):
    code, name = 3, "UNKNOWN_TOPIC_OR_PARTITION"


class LeaderNotAvailableError(KafkaError):
    code, name = 5, "LEADER_NOT_AVAILABLE"


class NotLeaderOrFollowerError(KafkaError):
    code, name = 6, "NOT_LEADER_OR_FOLLOWER"


class RequestTimedOutError(KafkaError):
    code, name = 7, "REQUEST_TIMED_OUT"


class BrokerNotAvailableError(KafkaError):
    code, name = 8, "BROKER_NOT_AVAILABLE"


class CoordinatorLoadInProgressError(KafkaError):
    code, name = 14, "COORDINATOR_LOAD_IN_PROGRESS"


class NotEnoughReplicasError(KafkaError):
    code, name = 19, "NOT_ENOUGH_REPLICAS"


class NotEnoughReplicasAfterAppendError(KafkaError):
    code, name = 20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


class OutOfOrderSequenceError(KafkaError):
    code, name = 45, "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(KafkaError):
    code, name = 47, "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateError(KafkaError):
    code, name = 48, "INVALID_TXN_STATE"


class TransactionCoordinatorFencedError(KafkaError):
    code, name = 52, "TRANSACTION_COORDINATOR_FENCED"


class KafkaStorageError(KafkaError):
    code, name = 56, "KAFKA_STORAGE_ERROR"


class CorruptIndexError(KafkaStorageError):
    pass


class CorruptCheckpointError(KafkaStorageError):
    pass


class PathEscapeError(KafkaStorageError):
    pass


class CorruptSnapshotError(KafkaStorageError):
    pass
