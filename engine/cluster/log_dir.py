"""The files that say whose a log directory and a partition directory are (reference §1.1).

``meta.properties`` at the top of each log directory, Kafka 3.7+ (KRaft, version 1), as
``java.util.Properties.store(writer, "")`` writes it: an empty comment line, a comment with
the date (``Date.toString()``, here from the virtual clock), then ``key=value`` lines in the
iteration order of the properties' hash table — which for these four keys is always::

    #
    #Thu Jan 01 00:00:01 UTC 1970
    node.id=1
    directory.id=2ZCWT3YzRqiMG0k0NcuT1g
    version=1
    cluster.id=j2rPhwXKSzyHq1NwqWyq3Q

``partition.metadata`` in each partition directory, two lines and no final newline::

    version: 0
    topic_id: 5pTiLd2lTuyzRbL7F0Rw4A

Ids are Kafka ``Uuid`` s: 16 random bytes with the version-4 and variant bits of
``java.util.UUID.randomUUID``, printed as URL-safe base64 without padding (22 characters),
never the reserved zero/one ids and never starting with ``-``. Their randomness comes from
a generator seeded from the cluster's seed, apart from the cluster's own ``rng`` so that
naming files does not shift any other random choice of a run.
"""
from __future__ import annotations

import base64
import random
from dataclasses import dataclass

from ..errors import KafkaStorageError

__all__ = ["META_PROPERTIES", "PARTITION_METADATA", "MetaProperties", "ClusterIdentity", "kafka_uuid",
           "java_date", "encode_partition_metadata", "decode_partition_metadata", "InconsistentClusterIdError",
           "InconsistentTopicIdError"]

META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"
_RESERVED = {bytes(16), bytes(15) + b"\x01"}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class InconsistentClusterIdError(KafkaStorageError):
    code, name = 104, "INCONSISTENT_CLUSTER_ID"


class InconsistentTopicIdError(KafkaStorageError):
    code, name = 103, "INCONSISTENT_TOPIC_ID"


def kafka_uuid(rng: random.Random) -> str:
    """A random Kafka ``Uuid`` as its 22-character string."""
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40    # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80    # IETF variant
        text = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
        if bytes(raw) not in _RESERVED and not text.startswith("-"):
            return text


def java_date(ms: int) -> str:
    """``java.util.Date.toString()`` in UTC, e.g. ``Thu Jan 01 00:00:01 UTC 1970`` (pure arithmetic:
    the engine's clock is virtual)."""
    days, rem = divmod(ms // 1000, 86400)
    hh, rem = divmod(rem, 3600)
    mm, ss = divmod(rem, 60)
    # civil-from-days (proleptic Gregorian), days since 1970-01-01
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    weekday = _DAYS[(days + 3) % 7]      # 1970-01-01 was a Thursday
    return f"{weekday} {_MONTHS[m - 1]} {d:02d} {hh:02d}:{mm:02d}:{ss:02d} UTC {y}"


@dataclass(frozen=True)
class MetaProperties:
    """A log directory's ``meta.properties`` (KRaft, version 1)."""

    cluster_id: str
    node_id: int
    directory_id: str
    version: int = 1

    # Java's Properties (a hash table) iterates these keys in this order.
    ORDER = ("node.id", "directory.id", "version", "cluster.id")

    def encode(self, now_ms: int) -> bytes:
        values = {"node.id": str(self.node_id), "directory.id": self.directory_id, "version": str(self.version),
                  "cluster.id": self.cluster_id}
        lines = ["#", "#" + java_date(now_ms)] + [f"{k}={values[k]}" for k in self.ORDER]
        return ("\n".join(lines) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, where: str = META_PROPERTIES) -> "MetaProperties":
        props = {}
        for line in data.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            key, sep, value = line.partition("=")
            if sep:
                props[key.strip()] = value.strip()
        try:
            version = int(props["version"])
            node_id = int(props["node.id"])
            return cls(props["cluster.id"], node_id, props["directory.id"], version)
        except KeyError as exc:
            raise KafkaStorageError(f"{where}: failed to find {exc.args[0]}") from None
        except ValueError as exc:
            raise KafkaStorageError(f"{where}: {exc}") from None


def encode_partition_metadata(topic_id: str) -> bytes:
    return f"version: 0\ntopic_id: {topic_id}".encode()


def decode_partition_metadata(data: bytes, where: str = PARTITION_METADATA) -> str:
    """The topic id of a ``partition.metadata`` file (version 0 or later, as Kafka reads it)."""
    lines = data.decode("utf-8", "replace").split("\n")
    try:
        key, value = lines[0].split(":", 1)
        if key != "version" or int(value.strip()) < 0:
            raise ValueError
        key2, topic_id = lines[1].split(":", 1)
        if key2 != "topic_id" or not topic_id.strip():
            raise ValueError
    except (ValueError, IndexError):
        raise KafkaStorageError(f"{where}: malformed partition metadata {data[:60]!r}") from None
    return topic_id.strip()


class ClusterIdentity:
    """The cluster id, each topic's id and each broker's directory id, drawn once each from
    a generator seeded by the cluster's seed (plain data: it pickles with the cluster)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(f"kafkaviz-ids-{seed}")
        self.cluster_id = kafka_uuid(self._rng)
        self.topic_ids: dict[str, str] = {}
        self.directory_ids: dict[int, str] = {}

    def topic_id(self, topic: str) -> str:
        if topic not in self.topic_ids:
            self.topic_ids[topic] = kafka_uuid(self._rng)
        return self.topic_ids[topic]

    def directory_id(self, broker: int) -> str:
        if broker not in self.directory_ids:
            self.directory_ids[broker] = kafka_uuid(self._rng)
        return self.directory_ids[broker]


def identity(cluster) -> ClusterIdentity:
    """The cluster's identity, made on first use (older snapshots have none)."""
    ident = getattr(cluster, "identity", None)
    if ident is None:
        ident = cluster.identity = ClusterIdentity(cluster.seed)
    return ident


def ensure_meta_properties(disk, log_dir: str, cluster, node_id: int, now_ms: int) -> tuple[MetaProperties, bool]:
    """Read ``meta.properties`` of ``log_dir``, or write it if the directory has none (a
    formatted, new directory). A file of another cluster or node is refused as Kafka refuses
    to start on it. Returns (the properties, whether they were written now)."""
    rel = f"{log_dir}/{META_PROPERTIES}"
    ident = identity(cluster)
    if disk.exists(rel):
        meta = MetaProperties.decode(disk.read_all(rel), rel)
        if meta.cluster_id != ident.cluster_id:
            raise InconsistentClusterIdError(f"{rel}: cluster.id {meta.cluster_id} does not match this cluster's "
                                             f"{ident.cluster_id}")
        if meta.node_id != node_id:
            raise KafkaStorageError(f"{rel}: node.id {meta.node_id} does not match broker {node_id}")
        ident.directory_ids.setdefault(node_id, meta.directory_id)
        return meta, False
    meta = MetaProperties(ident.cluster_id, node_id, ident.directory_id(node_id))
    disk.write_atomic(rel, meta.encode(now_ms))
    return meta, True


def check_partition_dirs(disk, log_dir: str, cluster, partitions: list[tuple[str, str]]) -> None:
    """Before a broker starts: every ``(directory, topic)`` whose ``partition.metadata`` exists
    must name the topic's id, so a refused start has changed nothing."""
    ident = identity(cluster)
    for name, topic in partitions:
        rel = f"{log_dir}/{name}/{PARTITION_METADATA}"
        if disk.exists(rel):
            found = decode_partition_metadata(disk.read_all(rel), rel)
            if found != ident.topic_id(topic):
                raise InconsistentTopicIdError(f"{rel}: topic id {found} is not {topic}'s id {ident.topic_id(topic)}")


def ensure_partition_metadata(disk, partition_dir: str, cluster, topic: str) -> tuple[str, bool]:
    """Write ``partition.metadata`` with the topic's id if it is missing; if present, its id
    must be the topic's (Kafka's InconsistentTopicIdException otherwise)."""
    rel = f"{partition_dir}/{PARTITION_METADATA}"
    topic_id = identity(cluster).topic_id(topic)
    if disk.exists(rel):
        found = decode_partition_metadata(disk.read_all(rel), rel)
        if found != topic_id:
            raise InconsistentTopicIdError(f"{rel}: topic id {found} is not {topic}'s id {topic_id}")
        return found, False
    disk.write_atomic(rel, encode_partition_metadata(topic_id))
    return topic_id, True
