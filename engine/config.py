"""Configuration with Kafka's names (dots become underscores, units last) and Kafka's
defaults. Lessons override the defaults; every value is validated on the way in.

``LogConfig`` holds the per-topic settings (``segment.bytes``, ``retention.ms``, …)
together with the broker-level log settings the storage engine needs
(``log.retention.check.interval.ms``). Cluster settings live in
``engine/cluster/config.py``.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .errors import InvalidConfigError, InvalidTopicError

__all__ = ["LogConfig", "validate_topic_name", "Bound", "config_from_mapping", "LONG_MAX", "INT_MAX"]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


def validate_topic_name(name: Any) -> str:
    """Kafka's rule: 1–249 characters of ``[a-zA-Z0-9._-]``, and not ``.`` or ``..``."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicError(f"topic name must be a non-empty string, got {name!r}")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_LENGTH:
        raise InvalidTopicError(f"topic name is {len(name)} characters long; the limit is {MAX_TOPIC_LENGTH}")
    if not _TOPIC_RE.match(name):
        bad = sorted({c for c in name if not re.match(r"[a-zA-Z0-9._-]", c)})
        raise InvalidTopicError(
            f"topic name {name!r} contains {''.join(bad)!r}; only ASCII letters, digits, '.', '_' and '-' are allowed")
    return name


@dataclass(frozen=True)
class Bound:
    """Allowed values for one config field: numeric range or a set of choices."""

    low: int | None = None
    high: int | None = None
    choices: tuple | None = None


def _f(default: Any, low: int | None = None, high: int | None = None, choices: tuple | None = None,
       kafka: str = "") -> Any:
    return field(default=default, metadata={"bound": Bound(low, high, choices), "kafka": kafka})


@dataclass(frozen=True)
class LogConfig:
    """Per-log settings. Field names are Kafka's config names with ``.`` → ``_``."""

    segment_bytes: int = _f(1073741824, 14, INT_MAX, kafka="segment.bytes")
    segment_ms: int = _f(604800000, 1, LONG_MAX, kafka="segment.ms")
    segment_jitter_ms: int = _f(0, 0, LONG_MAX, kafka="segment.jitter.ms")
    segment_index_bytes: int = _f(10485760, 4, INT_MAX, kafka="segment.index.bytes")
    index_interval_bytes: int = _f(4096, 0, INT_MAX, kafka="index.interval.bytes")
    retention_ms: int = _f(604800000, -1, LONG_MAX, kafka="retention.ms")
    retention_bytes: int = _f(-1, -1, LONG_MAX, kafka="retention.bytes")
    file_delete_delay_ms: int = _f(60000, 0, LONG_MAX, kafka="file.delete.delay.ms")
    flush_interval_messages: int = _f(LONG_MAX, 1, LONG_MAX, kafka="flush.messages")
    flush_interval_ms: int = _f(LONG_MAX, 0, LONG_MAX, kafka="flush.ms")
    max_message_bytes: int = _f(1048588, 0, INT_MAX, kafka="max.message.bytes")
    message_timestamp_type: str = _f("CreateTime", choices=("CreateTime", "LogAppendTime"),
                                     kafka="message.timestamp.type")
    cleanup_policy: str = _f("delete", choices=("delete", "compact", "compact,delete"), kafka="cleanup.policy")
    # Compaction (cleanup.policy with "compact"): engine/log/cleaner.py.
    min_cleanable_dirty_ratio: float = _f(0.5, 0, 1, kafka="min.cleanable.dirty.ratio")
    delete_retention_ms: int = _f(86400000, 0, LONG_MAX, kafka="delete.retention.ms")
    min_compaction_lag_ms: int = _f(0, 0, LONG_MAX, kafka="min.compaction.lag.ms")
    max_compaction_lag_ms: int = _f(LONG_MAX, 1, LONG_MAX, kafka="max.compaction.lag.ms")
    min_insync_replicas: int = _f(1, 1, INT_MAX, kafka="min.insync.replicas")
    unclean_leader_election_enable: bool = _f(False, kafka="unclean.leader.election.enable")
    preallocate: bool = _f(False, kafka="preallocate")
    # Broker-level log settings (one value per broker in Kafka; per log here so a lesson can set them).
    log_retention_check_interval_ms: int = _f(300000, 1, LONG_MAX, kafka="log.retention.check.interval.ms")

    def __post_init__(self) -> None:
        for f in fields(self):
            _check(f, getattr(self, f.name))

    def replace(self, **changes: Any) -> "LogConfig":
        return config_from_mapping(type(self), changes, base=self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def max_index_entries_offset(self) -> int:
        return self.segment_index_bytes // 8

    @property
    def max_index_entries_time(self) -> int:
        return self.segment_index_bytes // 12


def _check(f: dataclasses.Field, value: Any) -> None:
    bound: Bound = f.metadata.get("bound", Bound())
    if f.type in (bool, "bool"):
        if not isinstance(value, bool):
            raise InvalidConfigError(f"{f.name} must be true or false, got {value!r}")
        return
    if bound.choices is not None:
        if value not in bound.choices:
            raise InvalidConfigError(f"{f.name} must be one of {', '.join(map(str, bound.choices))}; got {value!r}")
        return
    if f.type in (float, "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise InvalidConfigError(f"{f.name} must be a number, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int):
        raise InvalidConfigError(f"{f.name} must be an integer, got {value!r}")
    if bound.low is not None and value < bound.low:
        raise InvalidConfigError(f"{f.name} must be at least {bound.low}, got {value}")
    if bound.high is not None and value > bound.high:
        raise InvalidConfigError(f"{f.name} must be at most {bound.high}, got {value}")


def config_from_mapping(cls: type, values: Mapping[str, Any], base: Any = None) -> Any:
    """Build a config dataclass from a mapping, accepting Kafka's dotted names too.
    Unknown keys are an error that lists the known ones; ints given as digit strings
    (from forms and URLs) are converted; everything is range-checked."""
    known = {f.name: f for f in fields(cls)}
    by_kafka = {f.metadata.get("kafka"): f.name for f in fields(cls) if f.metadata.get("kafka")}
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = key if key in known else by_kafka.get(key) or key.replace(".", "_")
        if name not in known:
            raise InvalidConfigError(f"unknown config {key!r}; known: {', '.join(sorted(known))}")
        out[name] = _coerce(known[name], value)
    if base is not None:
        return dataclasses.replace(base, **out)
    return cls(**out)


def _coerce(f: dataclasses.Field, value: Any) -> Any:
    if f.type in (bool, "bool") and isinstance(value, str):
        if value.lower() in ("true", "1", "yes", "on"):
            return True
        if value.lower() in ("false", "0", "no", "off"):
            return False
    if f.type in (int, "int") and isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value.strip()):
        return int(value)
    if f.type in (float, "float") and isinstance(value, str) and re.fullmatch(r"-?\d{1,20}(\.\d{1,20})?", value.strip()):
        return float(value)
    return value
