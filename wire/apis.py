"""The APIs the listener serves and the version ranges ApiVersions advertises.

``SUPPORTED`` maps an API key to (request schema name, lowest, highest advertised version).
Produce is listed from 0 because librdkafka reads a Produce minimum above 0 as "no
produce at all" (KAFKA-18659); versions 0-2 are gone from Kafka 4's definitions and a
request at one of them is refused as Kafka refuses it (``decodable`` below).
"""
from __future__ import annotations

from .schema import load_message

__all__ = ["SUPPORTED", "API_NAMES", "decodable", "advertised"]

SUPPORTED: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 0, 11),
    1: ("Fetch", 4, 12),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 0, 12),
    8: ("OffsetCommit", 2, 8),
    9: ("OffsetFetch", 1, 7),
    10: ("FindCoordinator", 0, 3),
    11: ("JoinGroup", 0, 7),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 4),
    14: ("SyncGroup", 0, 5),
    18: ("ApiVersions", 0, 4),
    19: ("CreateTopics", 2, 7),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 4),
    23: ("OffsetForLeaderEpoch", 2, 4),
    24: ("AddPartitionsToTxn", 0, 3),
    25: ("AddOffsetsToTxn", 0, 3),
    26: ("EndTxn", 0, 3),
    28: ("TxnOffsetCommit", 0, 3),
    32: ("DescribeConfigs", 1, 4),
}

API_NAMES = {key: name for key, (name, _, _) in SUPPORTED.items()}


def decodable(api_key: int, version: int) -> bool:
    """Advertised and present in the JSON definitions (Produce v0-2 is advertised only)."""
    entry = SUPPORTED.get(api_key)
    if entry is None:
        return False
    name, low, high = entry
    return low <= version <= high and version in load_message(name + "Request").valid


def advertised() -> list[tuple[int, int, int]]:
    """(api key, min, max) rows of an ApiVersions response, by key."""
    return [(key, low, high) for key, (_, low, high) in sorted(SUPPORTED.items())]
