"""The command vocabulary of a replicated cluster: every action a lesson, the web UI,
a fault schedule or ``python -m engine run`` can take, as data.

A command travels as a JSON object ``{"cmd": "produce", "topic": "t", "acks": "all", ...}``
(documented in ``docs/commands.md``). :func:`parse_command` turns such a dict into a
frozen dataclass, rejecting unknown commands, unknown fields, wrong types and
out-of-range numbers with an :class:`InvalidRequestError` that names the field and the
value. :func:`apply_command` then checks the command against the cluster as it is
(unknown broker, unknown topic, partition out of range, clock going backwards) *before*
touching it, and applies it, returning a JSON-plain result. A command that fails leaves
the cluster as it was.

Commands are the unit of a run's log (``engine/cluster/run.py``): same seed, same
initial config and same commands give the same event stream.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping

from ..config import LogConfig, config_from_mapping, validate_topic_name
from ..errors import BrokerNotAvailableError, InvalidRequestError, UnknownTopicOrPartitionError
from .config import ACKS  # re-exported: the web's acks choices
from ..words import Words
from .partition import record_digest  # re-exported: commands, events and the checker share one digest

__all__ = [
    "Command", "COMMANDS", "Fault", "Words", "faults", "node_fields", "ACKS", "field_spec", "parse_command", "apply_command", "validate_command", "command_to_dict",
    "record_digest", "MAX_ADVANCE_MS", "MAX_PRODUCE_COUNT", "MAX_VALUE_SIZE",
    "CreateTopic", "Produce", "Consume", "Crash", "Shutdown", "Restart", "Isolate", "CutLink", "HealLink",
    "HealAll", "SetLinkDelay", "SetDropProbability", "SlowFollower", "PauseFollower", "ResumeFollower",
    "Advance", "Jump", "SetConfig", "ElectPreferredLeaders", "CreateProducer",
    "InitTransactions", "BeginTransaction", "CommitTransaction", "AbortTransaction", "ConfigureTransactions",
    "SendOffsetsToTransaction", "OffsetFetch",
]

CLIENT_NODE = -1  # the network node of producers and consumers

# Bounds that keep one command cheap enough for a shared demo host.
MAX_ADVANCE_MS = 7 * 24 * 3600 * 1000
MAX_PRODUCE_COUNT = 10_000
MAX_VALUE_SIZE = 1 << 20
MAX_CONSUME_RECORDS = 10_000
MAX_PARTITIONS = 1_000

COMMANDS: dict[str, type["Command"]] = {}


# ---- field specs -------------------------------------------------------------------------

def _spec(kind: str, default: Any = dataclasses.MISSING, *, low: float | None = None,
          high: float | None = None, choices: tuple | None = None, doc: str = "", node: bool = False) -> Any:
    """A command field's metadata: its kind, bounds, choices and doc; ``node`` marks a field
    that names a broker (or controller) node, the one a fault is aimed at."""
    meta = {"kind": kind, "low": low, "high": high, "choices": choices, "doc": doc, "node": node}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


field_spec = _spec  # public: other worlds' vocabularies declare their fields the same way


def _type_name(kind: str) -> str:
    if kind.endswith("?") and kind not in ("int?", "str?", "strlist?"):
        return _type_name(kind[:-1]) + " or null"
    return {"int": "an integer", "int?": "an integer or null", "str": "a string", "str?": "a string or null",
            "num": "a number", "bool": "true or false", "dict": "an object", "acks": '"all", -1, 0 or 1',
            "scope_target": "a broker id, a topic name or null", "assignment": "a list of lists of broker ids",
            "strlist?": "a list of strings or null", "topic": "a topic name",
            "offsets": "a list of [topic, partition, offset] triples"}.get(kind, kind)


def _coerce(cmd: str, name: str, meta: Mapping[str, Any], value: Any) -> Any:
    kind = meta["kind"]

    def bad(extra: str = "") -> InvalidRequestError:
        return InvalidRequestError(
            f"{cmd}: field {name!r} must be {_type_name(kind)}{extra}, got {value!r}")

    if kind.endswith("?") and value is None:
        return None
    base = kind.rstrip("?")
    if base == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
    elif base == "num":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad()
        value = float(value)
    elif base in ("str", "topic"):
        if not isinstance(value, str):
            raise bad()
        if base == "topic":
            validate_topic_name(value)
    elif base == "bool":
        if not isinstance(value, bool):
            raise bad()
    elif base == "dict":
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise bad()
        for k, v in value.items():
            if not (v is None or isinstance(v, (str, int, float, bool))):
                raise InvalidRequestError(f"{cmd}: field {name!r} key {k!r} must map to a string, number or "
                                          f"boolean, got {v!r}")
        value = dict(value)
    elif base == "acks":
        if isinstance(value, str) and value.lower() in {**ACKS, "-1": -1}:
            value = {**ACKS, "-1": -1}[value.lower()]
        elif isinstance(value, bool) or value not in ACKS.values():
            raise bad()
    elif base == "scope_target":
        if isinstance(value, bool) or not (value is None or isinstance(value, (int, str))):
            raise bad()
    elif base == "assignment":
        if not isinstance(value, list) or not value or not all(
                isinstance(r, list) and r and all(isinstance(b, int) and not isinstance(b, bool) for b in r)
                for r in value):
            raise bad(" (one non-empty list per partition)")
        value = tuple(tuple(r) for r in value)
    elif base == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad()
        value = tuple(value)
    elif base == "offsets":
        # Empty is the default (topic, partition and offset given instead): a command's JSON
        # form parses back, and validate() asks for exactly one of the two.
        if not isinstance(value, list) or len(value) > MAX_PARTITIONS or not all(
                isinstance(o, list) and len(o) == 3 and isinstance(o[0], str)
                and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in o[1:]) for o in value):
            raise bad(" (partition and offset >= 0)")
        value = tuple(tuple(o) for o in value)
    else:  # pragma: no cover - a spec typo is a programmer error
        raise AssertionError(f"unknown field kind {kind}")
    if meta["choices"] is not None and value not in meta["choices"]:
        raise InvalidRequestError(f"{cmd}: field {name!r} must be one of "
                                  f"{', '.join(map(str, meta['choices']))}; got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if meta["low"] is not None and value < meta["low"]:
            raise InvalidRequestError(f"{cmd}: field {name!r} must be at least {meta['low']}, got {value}")
        if meta["high"] is not None and value > meta["high"]:
            raise InvalidRequestError(f"{cmd}: field {name!r} must be at most {meta['high']}, got {value}")
    return value


@dataclass(frozen=True)
class Fault:
    """What makes a command a *fault kind*: a button a learner presses in the fault panel,
    and a command a classroom preset may aim at a role (``$leader``) instead of a broker.

    Its words, in both languages, are here and nowhere else: ``label`` is the button's word,
    ``says`` the sentence a step that ran it says (``engine/narration.py`` ``command_label``
    fills in the command's fields: a node field as "broker 1" or "the client", ``{arrow}``
    as ↔ or → for a link; without ``says`` a step says "<cmd> broker N"). ``key`` is its
    keyboard shortcut, ``danger`` whether it is drawn as destructive. Which panel the button
    sits in, which fields a role may fill and the form's limits all follow from the command's
    fields: the fields marked ``node`` are the fault's target (one ``broker``: the broker
    buttons; ``a`` and ``b``: the link buttons), and a fault with another required field (a
    delay, a probability) has a form of its own. ``needs`` says what state the target must be
    in (the command's ``validate`` refuses the rest; the page greys the button). docs/web.md
    ("Adding a fault kind")."""

    label: Words
    key: str = ""
    danger: bool = False
    needs: str = ""      # "up": its broker must be running; "down": stopped (the page greys it out otherwise)
    says: Words | None = None


def faults(vocabulary: Mapping[str, type["Command"]] | None = None) -> dict[str, type["Command"]]:
    """The fault kinds of a vocabulary (the cluster's by default), in declaration order."""
    return {name: cls for name, cls in (COMMANDS if vocabulary is None else vocabulary).items()
            if cls.fault is not None}


def node_fields(cls: type["Command"]) -> tuple[str, ...]:
    """The fields of ``cls`` that name a node (a broker or a controller): a fault's target."""
    return tuple(f.name for f in fields(cls) if f.metadata.get("node"))


# ---- the commands ------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    """Base of every command. ``cmd`` is the JSON name; fields are the JSON fields."""

    cmd: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # The registry a subclass joins: the cluster's, or another world's (engine/storage_commands.py).
    vocabulary: ClassVar[dict[str, type["Command"]]] = COMMANDS
    # Set on a fault kind (a button of the fault panel; see Fault).
    fault: ClassVar[Fault | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.cmd:
            cls.vocabulary[cls.cmd] = cls

    def to_dict(self) -> dict[str, Any]:
        return command_to_dict(self)

    # Overridden: check against the live cluster without changing it.
    def validate(self, cluster: Any) -> None:
        pass

    def apply(self, cluster: Any) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class CreateTopic(Command):
    cmd: ClassVar[str] = "create_topic"
    summary: ClassVar[str] = "Create a topic; the controller assigns replicas and elects leaders."
    topic: str = _spec("topic", doc="topic name: 1–249 of [a-zA-Z0-9._-]")
    partitions: int = _spec("int", 1, low=1, high=MAX_PARTITIONS, doc="number of partitions")
    replication_factor: int | None = _spec("int?", None, low=1,
                                           doc="replicas per partition; null = min(3, number of brokers)")
    config: dict = _spec("dict", {}, doc="topic configs by Kafka name, e.g. {\"min.insync.replicas\": 2}")
    assignment: tuple | None = _spec("assignment?", None,
                                     doc="explicit replica list per partition (first = preferred leader)")

    def _rf(self, cluster: Any) -> int:
        if self.assignment is not None:
            return len(self.assignment[0])
        if self.replication_factor is not None:
            return self.replication_factor
        return min(3, len(cluster.brokers))

    def validate(self, cluster: Any) -> None:
        if self.topic in _topics(cluster):
            raise InvalidRequestError(f"create_topic: topic {self.topic!r} already exists")
        rf = self._rf(cluster)
        if rf > len(cluster.brokers):
            raise InvalidRequestError(f"create_topic: replication factor {rf} is larger than the number of "
                                      f"brokers ({len(cluster.brokers)})")
        if self.assignment is not None:
            if len(self.assignment) != self.partitions:
                raise InvalidRequestError(f"create_topic: assignment lists {len(self.assignment)} partitions "
                                          f"but partitions is {self.partitions}")
            if self.replication_factor is not None and self.replication_factor != rf:
                raise InvalidRequestError(f"create_topic: replication_factor {self.replication_factor} does not "
                                          f"match the assignment's {rf} replicas")
            for p, replicas in enumerate(self.assignment):
                if len(replicas) != rf:
                    raise InvalidRequestError(f"create_topic: partition {p} has {len(replicas)} replicas, "
                                              f"partition 0 has {rf}; all must be equal")
                if len(set(replicas)) != len(replicas):
                    raise InvalidRequestError(f"create_topic: partition {p} lists a broker twice: {list(replicas)}")
                for b in replicas:
                    _check_broker("create_topic", cluster, b)
        if self.config:
            config_from_mapping(LogConfig, dict(self.config), base=cluster.config.log)

    def apply(self, cluster: Any) -> dict[str, Any]:
        rf = self._rf(cluster)
        cluster.create_topic(self.topic, self.partitions, rf, dict(self.config) or None,
                             assignment=[list(r) for r in self.assignment] if self.assignment else None)
        return {"topic": self.topic, "partitions": self.partitions, "replication_factor": rf}


@dataclass(frozen=True)
class Produce(Command):
    cmd: ClassVar[str] = "produce"
    summary: ClassVar[str] = ("Send a produce request with `count` records to the partition's leader; "
                              "the answer arrives as the clock moves (see produce results).")
    topic: str = _spec("topic", doc="topic name")
    partition: int = _spec("int", 0, low=0, doc="partition number")
    acks: int = _spec("acks", -1, doc='"all" (= -1), 1 or 0')
    key: str | None = _spec("str?", None, doc="record key (UTF-8), null for none")
    count: int | None = _spec("int?", None, low=1, high=MAX_PRODUCE_COUNT,
                              doc="number of records (default 1, or len(values))")
    value: str | None = _spec("str?", None, doc="record value; with count > 1 the records are value-0, value-1, …")
    values: tuple | None = _spec("strlist?", None, doc="explicit list of record values (one record each)")
    value_size: int | None = _spec("int?", None, low=0, high=MAX_VALUE_SIZE,
                                   doc="generate values of exactly this many bytes")
    timeout_ms: int | None = _spec("int?", None, low=1, high=MAX_ADVANCE_MS,
                                   doc="request timeout (default request.timeout.ms)")
    producer: str | None = _spec("str?", None, doc="send through this producer (see create_producer): "
                                                   "retries, and sequence numbers when idempotent")

    def __post_init__(self) -> None:
        given = [n for n in ("value", "values", "value_size") if getattr(self, n) is not None]
        if len(given) > 1:
            raise InvalidRequestError(f"produce: give at most one of value, values, value_size; got {', '.join(given)}")
        if self.values is not None:
            if not self.values:
                raise InvalidRequestError("produce: values must not be empty")
            if len(self.values) > MAX_PRODUCE_COUNT:
                raise InvalidRequestError(f"produce: at most {MAX_PRODUCE_COUNT} values, got {len(self.values)}")
            if self.count is not None and self.count != len(self.values):
                raise InvalidRequestError(f"produce: count {self.count} does not match {len(self.values)} values")

    @property
    def n(self) -> int:
        if self.values is not None:
            return len(self.values)
        return 1 if self.count is None else self.count

    def record_values(self, seq: int) -> list[bytes]:
        """The values this command sends. Generated values embed ``seq`` (the event
        sequence number when the command ran), so they are unique within a run and the
        same on replay."""
        n = self.n
        if self.values is not None:
            return [v.encode() for v in self.values]
        if self.value is not None:
            return [self.value.encode()] if n == 1 else [f"{self.value}-{i}".encode() for i in range(n)]
        out = []
        for i in range(n):
            base = f"{self.topic}-{self.partition}#{seq}.{i}"
            if self.value_size is None:
                out.append(base.encode())
            else:
                out.append((base + "." * self.value_size)[: self.value_size].encode())
        return out

    def validate(self, cluster: Any) -> None:
        _check_partition("produce", cluster, self.topic, self.partition)
        if self.producer is not None and self.producer not in cluster.producers:
            known = ", ".join(sorted(cluster.producers)) or "none yet"
            raise InvalidRequestError(f"produce: unknown producer {self.producer!r} (producers: {known})")

    def apply(self, cluster: Any) -> dict[str, Any]:
        values = self.record_values(cluster.events.seq)
        key = None if self.key is None else self.key.encode()
        request = cluster.produce(self.topic, self.partition, values, key=key, acks=self.acks,
                                  timeout_ms=self.timeout_ms, producer=self.producer)
        return {"request_id": _plain_id(request), "topic": self.topic, "partition": self.partition,
                "acks": self.acks, "records": [{"key": self.key, "value": v.decode(),
                                               "digest": record_digest(key, v)} for v in values]}


@dataclass(frozen=True)
class Consume(Command):
    cmd: ClassVar[str] = "consume"
    summary: ClassVar[str] = "Read committed records (below the high watermark) from the partition's leader."
    topic: str = _spec("topic", doc="topic name")
    partition: int = _spec("int", 0, low=0, doc="partition number")
    offset: int = _spec("int", 0, low=0, doc="first offset to read")
    max_records: int = _spec("int", 100, low=1, high=MAX_CONSUME_RECORDS, doc="most records to return")
    isolation: str = _spec("str", "read_uncommitted", choices=("read_uncommitted", "read_committed"),
                           doc="isolation.level: read_committed reads below the LSO and skips aborted records")

    def validate(self, cluster: Any) -> None:
        _check_partition("consume", cluster, self.topic, self.partition)
        check = getattr(cluster, "check_consume", None)
        if check is not None:   # no leader, leader down, offset outside [log start, HW]
            check(self.topic, self.partition, self.offset, self.max_records, self.isolation)

    def apply(self, cluster: Any) -> dict[str, Any]:
        records = cluster.consume(self.topic, self.partition, self.offset, self.max_records, self.isolation)
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset,
                "records": [record_to_dict(r) for r in records]}


@dataclass(frozen=True)
class _BrokerCommand(Command):
    broker: int = _spec("int", low=0, doc="broker id", node=True)

    def validate(self, cluster: Any) -> None:
        _check_broker(self.cmd, cluster, self.broker)

    def apply(self, cluster: Any) -> dict[str, Any]:
        getattr(cluster, self.cmd)(self.broker)
        return {"broker": self.broker}


@dataclass(frozen=True)
class _ProcessCommand(_BrokerCommand):
    """A command on a process: a broker, or (KRaft dedicated mode) a controller node."""

    def validate(self, cluster: Any) -> None:
        _check_process(self.cmd, cluster, self.broker)


@dataclass(frozen=True)
class _StopCommand(_ProcessCommand):
    def validate(self, cluster: Any) -> None:
        super().validate(cluster)
        if not _process(cluster, self.broker).alive:
            raise BrokerNotAvailableError(f"{self.cmd}: broker {self.broker} is already down")


@dataclass(frozen=True)
class Crash(_StopCommand):
    cmd: ClassVar[str] = "crash"
    summary: ClassVar[str] = "Hard crash (power loss): everything not fsync'd is lost; the broker stays down."
    fault: ClassVar[Fault | None] = Fault(Words("Crash", "崩溃"), "c", danger=True, needs="up",
                                          says=Words("crash {broker}", "让 {broker} 崩溃"))


@dataclass(frozen=True)
class Shutdown(_StopCommand):
    cmd: ClassVar[str] = "shutdown"
    summary: ClassVar[str] = "Clean shutdown: flush, write checkpoints, move leadership away, stop."
    fault: ClassVar[Fault | None] = Fault(Words("Shut down", "正常关闭"), "s", needs="up",
                                          says=Words("shutdown {broker}", "正常关闭 {broker}"))


@dataclass(frozen=True)
class Restart(_ProcessCommand):
    cmd: ClassVar[str] = "restart"
    summary: ClassVar[str] = "Start a stopped broker: log recovery, then it rejoins as follower."
    fault: ClassVar[Fault | None] = Fault(Words("Restart", "重启"), "r", needs="down",
                                          says=Words("restart {broker}", "重启 {broker}"))

    def validate(self, cluster: Any) -> None:
        super().validate(cluster)
        if _process(cluster, self.broker).alive:
            raise InvalidRequestError(f"restart: broker {self.broker} is running; crash or shut it down first")


@dataclass(frozen=True)
class Isolate(_ProcessCommand):
    cmd: ClassVar[str] = "isolate"
    summary: ClassVar[str] = "Cut every link between this broker and all others (it keeps running)."
    fault: ClassVar[Fault | None] = Fault(Words("Isolate", "隔离"), "i", says=Words("isolate {broker}", "隔离 {broker}"))


@dataclass(frozen=True)
class PauseFollower(_BrokerCommand):
    cmd: ClassVar[str] = "pause_follower"
    summary: ClassVar[str] = "Stop this broker's replica fetchers (it falls out of the ISR after replica.lag.time.max.ms)."
    fault: ClassVar[Fault | None] = Fault(Words("Pause fetching", "暂停拉取"), "p",
                                          says=Words("pause follower {broker}", "暂停 {broker} 的拉取"))


@dataclass(frozen=True)
class ResumeFollower(_BrokerCommand):
    cmd: ClassVar[str] = "resume_follower"
    summary: ClassVar[str] = "Resume this broker's replica fetchers (a slow_follower delay stays)."
    fault: ClassVar[Fault | None] = Fault(Words("Resume fetching", "恢复拉取"), "u",
                                          says=Words("resume follower {broker}", "恢复 {broker} 的拉取"))


@dataclass(frozen=True)
class SlowFollower(Command):
    cmd: ClassVar[str] = "slow_follower"
    summary: ClassVar[str] = "Add a delay before each fetch this broker's replica fetchers send."
    fault: ClassVar[Fault | None] = Fault(Words("Slow down", "减速"), says=Words(
        "slow {broker}'s fetches by {delay_ms} ms", "让 {broker} 每次拉取前等待 {delay_ms} 毫秒"))
    broker: int = _spec("int", low=0, doc="broker id", node=True)
    delay_ms: int = _spec("int", low=0, high=MAX_ADVANCE_MS, doc="extra delay per fetch, ms")

    def validate(self, cluster: Any) -> None:
        _check_broker(self.cmd, cluster, self.broker)

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.slow_follower(self.broker, self.delay_ms)
        return {"broker": self.broker, "delay_ms": self.delay_ms}


@dataclass(frozen=True)
class _LinkCommand(Command):
    a: int = _spec("int", low=CLIENT_NODE, doc="broker id at one end (-1 = the client)", node=True)
    b: int = _spec("int", low=CLIENT_NODE, doc="broker id at the other end (-1 = the client)", node=True)

    def validate(self, cluster: Any) -> None:
        for node in (self.a, self.b):
            if node != CLIENT_NODE:
                _check_process(self.cmd, cluster, node)
        if self.a == self.b:
            raise InvalidRequestError(f"{self.cmd}: a link needs two different brokers, got {self.a} twice")


@dataclass(frozen=True)
class CutLink(_LinkCommand):
    cmd: ClassVar[str] = "cut_link"
    summary: ClassVar[str] = "Drop every message on the link a→b (and b→a unless both is false)."
    fault: ClassVar[Fault | None] = Fault(Words("Cut", "切断"), danger=True, says=Words("cut link {a} {arrow} {b}", "切断链路 {a} {arrow} {b}"))
    both: bool = _spec("bool", True, doc="cut both directions; false cuts only a→b")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.cut_link(self.a, self.b, both=self.both)
        return {"a": self.a, "b": self.b, "both": self.both}


@dataclass(frozen=True)
class HealLink(_LinkCommand):
    cmd: ClassVar[str] = "heal_link"
    summary: ClassVar[str] = "Restore the link a→b (and b→a unless both is false)."
    fault: ClassVar[Fault | None] = Fault(Words("Heal", "修复"), says=Words("heal link {a} {arrow} {b}", "修复链路 {a} {arrow} {b}"))
    both: bool = _spec("bool", True, doc="heal both directions; false heals only a→b")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.heal_link(self.a, self.b, both=self.both)
        return {"a": self.a, "b": self.b, "both": self.both}


@dataclass(frozen=True)
class SetLinkDelay(_LinkCommand):
    cmd: ClassVar[str] = "set_link_delay"
    summary: ClassVar[str] = "Set the one-way latency of the link a→b (and b→a unless both is false)."
    delay_ms: int = _spec("int", low=0, high=MAX_ADVANCE_MS, doc="latency in ms")
    both: bool = _spec("bool", True, doc="apply to both directions")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.set_link_delay(self.a, self.b, self.delay_ms, both=self.both)
        return {"a": self.a, "b": self.b, "delay_ms": self.delay_ms, "both": self.both}


@dataclass(frozen=True)
class SetDropProbability(_LinkCommand):
    cmd: ClassVar[str] = "set_drop_probability"
    summary: ClassVar[str] = "Drop each message on the link a→b (and b→a unless both is false) with this probability."
    probability: float = _spec("num", low=0.0, high=1.0, doc="0.0 – 1.0, drawn from the cluster's seeded rng")
    both: bool = _spec("bool", True, doc="apply to both directions")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.set_drop_probability(self.a, self.b, self.probability, both=self.both)
        return {"a": self.a, "b": self.b, "probability": self.probability, "both": self.both}


@dataclass(frozen=True)
class HealAll(Command):
    cmd: ClassVar[str] = "heal_all"
    summary: ClassVar[str] = "Restore every link (undo isolate, cut_link, delays and drop probabilities)."

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.heal_all()
        return {}


@dataclass(frozen=True)
class Advance(Command):
    cmd: ClassVar[str] = "advance"
    summary: ClassVar[str] = "Move the virtual clock forward, running everything due (fetches, timeouts, elections)."
    ms: int = _spec("int", low=0, high=MAX_ADVANCE_MS, doc="milliseconds to advance")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.advance(self.ms)
        return {"time_ms": cluster.scheduler.now_ms()}


@dataclass(frozen=True)
class Jump(Command):
    cmd: ClassVar[str] = "jump"
    summary: ClassVar[str] = "Move the virtual clock to an absolute time (never backwards), running everything due."
    to_ms: int = _spec("int", low=0, doc="target virtual time in ms since the start of the run")

    def validate(self, cluster: Any) -> None:
        now = cluster.scheduler.now_ms()
        if self.to_ms < now:
            raise InvalidRequestError(f"jump: the clock cannot go backwards: now {now} ms, asked {self.to_ms} ms")
        if self.to_ms - now > MAX_ADVANCE_MS:
            raise InvalidRequestError(f"jump: at most {MAX_ADVANCE_MS} ms ahead at once; now {now} ms, "
                                      f"asked {self.to_ms} ms")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.advance(self.to_ms - cluster.scheduler.now_ms())
        return {"time_ms": cluster.scheduler.now_ms()}


@dataclass(frozen=True)
class SetConfig(Command):
    cmd: ClassVar[str] = "set_config"
    summary: ClassVar[str] = "Change configs at cluster, broker or topic scope (Kafka names, validated)."
    scope: str = _spec("str", choices=("cluster", "broker", "topic"), doc='"cluster", "broker" or "topic"')
    changes: dict = _spec("dict", doc="config names (Kafka's dotted names or field names) to new values")
    target: int | str | None = _spec("scope_target", None,
                                     doc="broker id (scope broker), topic name (scope topic), null (scope cluster)")

    def __post_init__(self) -> None:
        if not self.changes:
            raise InvalidRequestError("set_config: changes must name at least one config")
        if self.scope == "cluster" and self.target is not None:
            raise InvalidRequestError(f"set_config: scope cluster takes no target, got {self.target!r}")
        if self.scope == "broker" and (isinstance(self.target, bool) or not isinstance(self.target, int)):
            raise InvalidRequestError(f"set_config: scope broker needs a broker id as target, got {self.target!r}")
        if self.scope == "topic" and not isinstance(self.target, str):
            raise InvalidRequestError(f"set_config: scope topic needs a topic name as target, got {self.target!r}")

    def validate(self, cluster: Any) -> None:
        if self.scope == "broker":
            _check_broker("set_config", cluster, self.target)
        elif self.scope == "topic" and self.target not in _topics(cluster):
            raise UnknownTopicOrPartitionError(f"set_config: unknown topic {self.target!r}")
        check = getattr(cluster, "check_config", None)
        if check is not None:   # unknown names, values out of range
            check(self.scope, self.target, dict(self.changes))

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.set_config(self.scope, self.target, dict(self.changes))
        return {"scope": self.scope, "target": self.target, "changes": dict(self.changes)}


@dataclass(frozen=True)
class ElectPreferredLeaders(Command):
    cmd: ClassVar[str] = "elect_preferred_leaders"
    summary: ClassVar[str] = ("Move leadership of every partition back to its preferred replica (first in the "
                              "assignment) where that replica is alive and in the ISR.")

    def apply(self, cluster: Any) -> dict[str, Any]:
        out = cluster.elect_preferred_leaders()
        return {"elected": _plain_id(out)} if out is not None else {}


# ---- producers (retries, idempotence) ------------------------------------------------------

@dataclass(frozen=True)
class CreateProducer(Command):
    cmd: ClassVar[str] = "create_producer"
    summary: ClassVar[str] = ("Create a producer on the client: it retries failed sends; with idempotence it "
                              "gets a producer id and sequence numbers, so a retry is never written twice.")
    name: str = _spec("str", doc="the producer's name, used by produce's `producer` field")
    idempotent: bool = _spec("bool", True, doc="enable.idempotence")
    retries: int = _spec("int", 1000, low=0, high=1000, doc="retries")
    retry_backoff_ms: int = _spec("int", 100, low=0, high=60_000, doc="retry.backoff.ms")
    delivery_timeout_ms: int = _spec("int", 120_000, low=1, high=MAX_ADVANCE_MS, doc="delivery.timeout.ms")
    transactional_id: str | None = _spec("str?", None, doc="transactional.id: makes the producer transactional "
                                                           "(and idempotent); run init_transactions next")
    transaction_timeout_ms: int = _spec("int", 60_000, low=1, high=900_000, doc="transaction.timeout.ms")

    def validate(self, cluster: Any) -> None:
        if not self.name or len(self.name) > 64:
            raise InvalidRequestError(f"create_producer: name must have 1-64 characters, got {self.name!r}")
        if self.name in cluster.producers:
            raise InvalidRequestError(f"create_producer: producer {self.name!r} already exists")

    def apply(self, cluster: Any) -> dict[str, Any]:
        prod = cluster.create_producer(self.name, idempotent=self.idempotent, retries=self.retries,
                                       retry_backoff_ms=self.retry_backoff_ms,
                                       delivery_timeout_ms=self.delivery_timeout_ms,
                                       transactional_id=self.transactional_id,
                                       transaction_timeout_ms=self.transaction_timeout_ms)
        return prod.to_dict()


@dataclass(frozen=True)
class _TxnCommand(Command):
    """A transactional producer's call, checked against its state before anything is sent."""

    name: str = _spec("str", doc="a producer created with a transactional_id")
    states: ClassVar[tuple] = ()
    call: ClassVar[str] = ""

    def validate(self, cluster: Any) -> None:
        from ..errors import InvalidTxnStateError
        prod = cluster.producers.get(self.name)
        if prod is None or prod.transactional_id is None:
            raise InvalidRequestError(f"{self.cmd}: {self.name!r} is not a transactional producer")
        if prod.txn_state not in self.states:
            raise InvalidTxnStateError(f"{self.cmd}: producer {self.name!r} is {prod.txn_state}; "
                                       f"{self.cmd} needs {' or '.join(self.states)} (INVALID_TXN_STATE)")

    def apply(self, cluster: Any) -> dict[str, Any]:
        self.run(cluster)
        return cluster.producers[self.name].to_dict()

    def run(self, cluster: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class InitTransactions(_TxnCommand):
    cmd: ClassVar[str] = "init_transactions"
    summary: ClassVar[str] = ("InitProducerId at the transaction coordinator: a producer id and a bumped epoch, "
                              "which fences any older instance with the same transactional_id.")
    states: ClassVar[tuple] = ("uninitialized", "ready", "fenced")

    def run(self, cluster: Any) -> None:
        cluster.init_transactions(self.name)


@dataclass(frozen=True)
class BeginTransaction(_TxnCommand):
    cmd: ClassVar[str] = "begin_transaction"
    summary: ClassVar[str] = "Start a transaction (client side only: partitions join it on first write)."
    states: ClassVar[tuple] = ("ready",)

    def run(self, cluster: Any) -> None:
        cluster.begin_transaction(self.name)


@dataclass(frozen=True)
class CommitTransaction(_TxnCommand):
    cmd: ClassVar[str] = "commit_transaction"
    summary: ClassVar[str] = ("Flush, then EndTxn(commit): the coordinator writes PrepareCommit, the leaders "
                              "write COMMIT markers, then CompleteCommit.")
    states: ClassVar[tuple] = ("in_transaction",)

    def run(self, cluster: Any) -> None:
        cluster.commit_transaction(self.name)


@dataclass(frozen=True)
class AbortTransaction(_TxnCommand):
    cmd: ClassVar[str] = "abort_transaction"
    summary: ClassVar[str] = ("EndTxn(abort): ABORT markers, an entry in each partition's .txnindex; "
                              "read_committed consumers skip the transaction's records.")
    states: ClassVar[tuple] = ("in_transaction", "abortable_error")

    def run(self, cluster: Any) -> None:
        cluster.abort_transaction(self.name)


@dataclass(frozen=True)
class SendOffsetsToTransaction(_TxnCommand):
    cmd: ClassVar[str] = "send_offsets_to_transaction"
    summary: ClassVar[str] = ("sendOffsetsToTransaction: AddOffsetsToTxn puts the group's __consumer_offsets "
                              "partition into the transaction, then TxnOffsetCommit writes the offsets there as "
                              "transactional records, committed by the COMMIT marker, discarded by ABORT.")
    states: ClassVar[tuple] = ("in_transaction",)
    group: str = _spec("str", "", doc="the consumer group whose input positions these are")
    offsets: tuple = _spec("offsets", (), doc="[[topic, partition, next offset to read], ...]")
    topic: str | None = _spec("str?", None, doc="one partition's position instead of offsets (a form's fields)")
    partition: int = _spec("int", 0, low=0, high=MAX_PARTITIONS - 1, doc="with topic")
    offset: int | None = _spec("int?", None, low=0, doc="with topic: the next offset to read")

    def triples(self) -> list:
        if self.topic is not None and self.offset is not None:
            return [[self.topic, self.partition, self.offset]]
        return [list(o) for o in self.offsets]

    def validate(self, cluster: Any) -> None:
        super().validate(cluster)
        if not self.group or len(self.group) > 255:
            raise InvalidRequestError(f"{self.cmd}: group must have 1-255 characters, got {self.group!r}")
        if bool(self.offsets) == (self.topic is not None and self.offset is not None):
            raise InvalidRequestError(f"{self.cmd}: give either offsets ([[topic, partition, offset], ...]) or "
                                      f"topic, partition and offset")
        if cluster.producers[self.name].txn_offsets is not None:
            raise InvalidRequestError(f"{self.cmd}: producer {self.name!r} is still sending offsets")
        for topic, partition, _ in self.triples():
            cluster.controller.partition(topic, partition)

    def run(self, cluster: Any) -> None:
        cluster.send_offsets_to_transaction(self.name, self.group, self.triples())


@dataclass(frozen=True)
class OffsetFetch(Command):
    cmd: ClassVar[str] = "offset_fetch"
    summary: ClassVar[str] = ("OffsetFetch: the group's committed offsets; with require_stable a partition whose "
                              "transactional offsets are still pending answers UNSTABLE_OFFSET_COMMIT.")
    group: str = _spec("str", doc="group.id")
    require_stable: bool = _spec("bool", False, doc="require_stable (the Java consumer sets it under "
                                                    "read_committed)")

    def validate(self, cluster: Any) -> None:
        if not self.group or len(self.group) > 255:
            raise InvalidRequestError(f"{self.cmd}: group must have 1-255 characters, got {self.group!r}")

    def apply(self, cluster: Any) -> dict[str, Any]:
        got = cluster.txn_offset_service().fetch(self.group, self.require_stable)
        return {"group": self.group, "error": got["error"],
                "offsets": [[t, p, o] for (t, p), o in sorted(got["offsets"].items())],
                "unstable": [[t, p] for t, p in got["unstable"]]}


@dataclass(frozen=True)
class ConfigureTransactions(Command):
    cmd: ClassVar[str] = "configure_transactions"
    summary: ClassVar[str] = "Broker transaction settings; only before the first transactional producer."
    transaction_state_log_num_partitions: int = _spec("int", 50, low=1, high=MAX_PARTITIONS,
                                                      doc="transaction.state.log.num.partitions")

    def validate(self, cluster: Any) -> None:
        if getattr(cluster, "transactions", None) is not None:
            raise InvalidRequestError("configure_transactions: transactions are already in use")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.transaction_service(num_partitions=self.transaction_state_log_num_partitions)
        return {"transaction_state_log_num_partitions": self.transaction_state_log_num_partitions}


# ---- parsing and applying ------------------------------------------------------------------

def parse_command(data: Any, vocabulary: Mapping[str, type[Command]] = COMMANDS) -> Command:
    """A command dict (as decoded from JSON) → a validated, frozen :class:`Command` of
    ``vocabulary`` (the cluster's by default)."""
    if not isinstance(data, dict):
        raise InvalidRequestError(f"a command must be a JSON object, got {data!r}")
    name = data.get("cmd")
    if not isinstance(name, str):
        raise InvalidRequestError(f"a command needs a \"cmd\" string field, got {data!r}")
    cls = vocabulary.get(name)
    if cls is None:
        raise InvalidRequestError(f"unknown command {name!r}; known: {', '.join(sorted(vocabulary))}")
    specs = {f.name: f for f in fields(cls)}
    unknown = sorted(k for k in data if k != "cmd" and k not in specs)
    if unknown:
        raise InvalidRequestError(f"{name}: unknown field{'s' if len(unknown) > 1 else ''} "
                                  f"{', '.join(map(repr, unknown))}; known: {', '.join(specs) or '(none)'}")
    kwargs = {}
    for fname, f in specs.items():
        if fname in data:
            kwargs[fname] = _coerce(name, fname, f.metadata, data[fname])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise InvalidRequestError(f"{name}: missing required field {fname!r}")
    return cls(**kwargs)


def command_to_dict(cmd: Command) -> dict[str, Any]:
    """The JSON form of a command, with every field (defaults included)."""
    out: dict[str, Any] = {"cmd": cmd.cmd}
    for f in fields(cmd):
        v = getattr(cmd, f.name)
        if isinstance(v, tuple):
            v = [list(x) if isinstance(x, tuple) else x for x in v]
        elif isinstance(v, dict):
            v = dict(v)
        out[f.name] = v
    return out


def validate_command(cluster: Any, cmd: Command) -> None:
    """Check ``cmd`` against the cluster's current state; raises, never mutates."""
    cmd.validate(cluster)


def apply_command(cluster: Any, cmd: Command | Mapping[str, Any]) -> dict[str, Any]:
    """Parse (if a dict), validate against the cluster, apply. Returns a JSON-plain result
    ``{"cmd": name, "ok": True, "time_ms": t, ...}``. Raises an engine error (and changes
    nothing) when the command is malformed or impossible."""
    if not isinstance(cmd, Command):
        cmd = parse_command(dict(cmd))
    cmd.validate(cluster)
    result = cmd.apply(cluster)
    return {"cmd": cmd.cmd, "ok": True, **result, "time_ms": cluster.scheduler.now_ms()}


# ---- helpers ------------------------------------------------------------------------------

def record_to_dict(r: Any) -> dict[str, Any]:
    """A decoded record as JSON: offset, key/value (UTF-8 text, or hex when not text), digest."""
    return {"offset": r.offset, "timestamp": r.timestamp, "key": _text(r.key), "value": _text(r.value),
            "digest": record_digest(r.key, r.value)}


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + b.hex()


def _plain_id(x: Any) -> Any:
    if x is None or isinstance(x, (int, str, bool, float)):
        return x
    if dataclasses.is_dataclass(x):
        return {f.name: _plain_id(getattr(x, f.name)) for f in fields(x)}
    if isinstance(x, (list, tuple)):
        return [_plain_id(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain_id(v) for k, v in x.items()}
    return str(x)


def _topics(cluster: Any) -> dict[str, int]:
    """Topic name → number of partitions, read from the cluster without changing it."""
    topics = getattr(cluster, "topics", None)
    if topics is None:
        topics = getattr(cluster.controller, "topics", {})
    out = {}
    for name, t in topics.items():
        if isinstance(t, int):
            out[name] = t
        elif isinstance(t, (list, tuple, dict)):
            out[name] = len(t)
        else:
            n = getattr(t, "partitions", None)
            out[name] = n if isinstance(n, int) else len(n)
    return out


def _check_broker(cmd: str, cluster: Any, broker: Any) -> None:
    if broker not in cluster.brokers:
        raise InvalidRequestError(f"{cmd}: unknown broker {broker!r}; brokers are "
                                  f"{', '.join(map(str, sorted(cluster.brokers)))}")


def _controller_nodes(cluster: Any) -> dict:
    return getattr(cluster.controller, "controller_nodes", None) or {}


def _process(cluster: Any, node: int) -> Any:
    return cluster.brokers[node] if node in cluster.brokers else _controller_nodes(cluster)[node]


def _check_process(cmd: str, cluster: Any, node: Any) -> None:
    """A broker, or a dedicated controller node (KRaft)."""
    if node in cluster.brokers or (not isinstance(node, bool) and node in _controller_nodes(cluster)):
        return
    ids = sorted(cluster.brokers) + sorted(_controller_nodes(cluster))
    raise InvalidRequestError(f"{cmd}: unknown broker {node!r}; brokers are {', '.join(map(str, ids))}")


def _check_partition(cmd: str, cluster: Any, topic: str, partition: int) -> None:
    topics = _topics(cluster)
    if topic not in topics:
        raise UnknownTopicOrPartitionError(f"{cmd}: unknown topic {topic!r}")
    if not 0 <= partition < topics[topic]:
        raise UnknownTopicOrPartitionError(f"{cmd}: topic {topic!r} has partitions 0..{topics[topic] - 1}, "
                                           f"not {partition}")


# ---- consumers, groups and the log cleaner (engine/cluster/consumer.py) ----------------------

def _groups(cluster: Any) -> Any:
    return cluster.group_service()


def _consumer(cmd: str, cluster: Any, name: str) -> Any:
    svc = getattr(cluster, "groups", None)
    c = svc.consumers.get(name) if svc is not None else None
    if c is None:
        known = ", ".join(sorted(svc.consumers)) if svc is not None and svc.consumers else "none"
        raise InvalidRequestError(f"{cmd}: unknown consumer {name!r} (consumers: {known})")
    return c


@dataclass(frozen=True)
class ConfigureGroups(Command):
    cmd: ClassVar[str] = "configure_groups"
    summary: ClassVar[str] = ("Broker group settings; only before the first consumer joins (they shape "
                              "__consumer_offsets).")
    offsets_topic_num_partitions: int = _spec("int", 50, low=1, high=MAX_PARTITIONS,
                                              doc="offsets.topic.num.partitions")
    group_initial_rebalance_delay_ms: int = _spec("int", 3000, low=0, high=MAX_ADVANCE_MS,
                                                  doc="group.initial.rebalance.delay.ms")

    def validate(self, cluster: Any) -> None:
        if getattr(cluster, "groups", None) is not None:
            raise InvalidRequestError("configure_groups: groups are already in use; configure them first")

    def apply(self, cluster: Any) -> dict[str, Any]:
        cluster.group_service(offsets_partitions=self.offsets_topic_num_partitions,
                              initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms)
        return {"offsets_topic_num_partitions": self.offsets_topic_num_partitions,
                "group_initial_rebalance_delay_ms": self.group_initial_rebalance_delay_ms}


@dataclass(frozen=True)
class ConsumerJoin(Command):
    cmd: ClassVar[str] = "consumer_join"
    summary: ClassVar[str] = ("Start a consumer (or restart a crashed one) in a group: it finds the coordinator "
                              "and sends JoinGroup.")
    name: str = _spec("str", doc="consumer name (client.id); member ids are <name>-<n>")
    group: str = _spec("str", doc="group.id")
    topics: tuple = _spec("strlist?", None, doc="subscribed topics")
    strategies: tuple | None = _spec("strlist?", None,
                                     doc='partition.assignment.strategy, e.g. ["range", "cooperative-sticky"] '
                                         "(the default)")
    session_timeout_ms: int = _spec("int", 45000, low=1, high=MAX_ADVANCE_MS, doc="session.timeout.ms")
    heartbeat_interval_ms: int = _spec("int", 3000, low=1, high=MAX_ADVANCE_MS, doc="heartbeat.interval.ms")
    max_poll_interval_ms: int = _spec("int", 300000, low=1, high=MAX_ADVANCE_MS, doc="max.poll.interval.ms")
    auto_offset_reset: str = _spec("str", "latest", choices=("earliest", "latest", "none"), doc="auto.offset.reset")
    enable_auto_commit: bool = _spec("bool", True, doc="enable.auto.commit")
    auto_commit_interval_ms: int = _spec("int", 5000, low=1, high=MAX_ADVANCE_MS, doc="auto.commit.interval.ms")

    def _config(self) -> Any:
        from .consumer import ConsumerConfig
        kw = {}
        if self.strategies is not None:
            kw["strategies"] = tuple(self.strategies)
        return ConsumerConfig(self.session_timeout_ms, self.heartbeat_interval_ms, self.max_poll_interval_ms,
                              self.auto_offset_reset, self.enable_auto_commit, self.auto_commit_interval_ms, **kw)

    def validate(self, cluster: Any) -> None:
        if not self.name or not self.group:
            raise InvalidRequestError("consumer_join: name and group must be non-empty")
        self._config()
        svc = getattr(cluster, "groups", None)
        existing = svc.consumers.get(self.name) if svc is not None else None
        if existing is not None and existing.alive:
            raise InvalidRequestError(f"consumer_join: consumer {self.name!r} is already running")
        if existing is None and not self.topics:
            raise InvalidRequestError("consumer_join: a new consumer needs topics to subscribe to")
        for t in self.topics or ():
            if t not in _topics(cluster):
                raise UnknownTopicOrPartitionError(f"consumer_join: unknown topic {t!r}")
        if existing is not None and existing.group != self.group:
            raise InvalidRequestError(f"consumer_join: consumer {self.name!r} belongs to group {existing.group!r}")
        if len(cluster.brokers) and not any(b.alive for b in cluster.brokers.values()):
            raise BrokerNotAvailableError("consumer_join: no broker is running")

    def apply(self, cluster: Any) -> dict[str, Any]:
        from .consumer import Consumer
        svc = _groups(cluster)
        svc.ensure_offsets_topic()
        existing = svc.consumers.get(self.name)
        if existing is not None:
            if self.topics:
                existing.topics = list(dict.fromkeys(self.topics))
            existing.restart()
            c = existing
        else:
            c = Consumer(svc, self.name, self.group, list(self.topics), self._config())
            svc.consumers[self.name] = c
            c.join()
        return {"consumer": self.name, "group": self.group, "offsets_partition": svc.partition_for(self.group),
                "topics": list(c.topics), "strategies": list(c.config.strategies)}


@dataclass(frozen=True)
class _LiveConsumerCommand(Command):
    """A command to a running consumer; ``method`` (if set) is the Consumer method it calls."""

    method: ClassVar[str] = ""
    name: str = _spec("str", doc="consumer name")

    def validate(self, cluster: Any) -> None:
        if not _consumer(self.cmd, cluster, self.name).alive:
            raise InvalidRequestError(f"{self.cmd}: consumer {self.name!r} is not running (it crashed); "
                                      "consumer_join restarts it")

    def apply(self, cluster: Any) -> dict[str, Any]:
        getattr(_consumer(self.cmd, cluster, self.name), self.method)()
        return {"consumer": self.name}


@dataclass(frozen=True)
class ConsumerPoll(_LiveConsumerCommand):
    cmd: ClassVar[str] = "consumer_poll"
    summary: ClassVar[str] = ("KafkaConsumer.poll: fetch from each owned partition's leader up to its high "
                              "watermark (auto-commits first when due).")
    max_records: int = _spec("int", 500, low=1, high=MAX_CONSUME_RECORDS, doc="max.poll.records")

    def apply(self, cluster: Any) -> dict[str, Any]:
        c = _consumer(self.cmd, cluster, self.name)
        got = c.poll(self.max_records)
        return {"consumer": self.name, "status": c.status, "generation": c.generation,
                "owned": [list(tp) for tp in c.owned],
                "records": [{"topic": t, "partition": p, **record_to_dict(r)} for t, p, r in got]}


@dataclass(frozen=True)
class ConsumerCommit(_LiveConsumerCommand):
    cmd: ClassVar[str] = "consumer_commit"
    summary: ClassVar[str] = ("Manual commitSync: commit the consumer's positions (or the given offsets) to "
                              "__consumer_offsets.")
    offsets: dict | None = _spec("dict?", None, doc='{"topic-partition": next offset}; default: the positions')

    def _offsets(self, cluster: Any) -> dict | None:
        if self.offsets is None:
            return None
        out = {}
        topics = _topics(cluster)
        for k, v in self.offsets.items():
            t, sep, p = k.rpartition("-")
            if not sep or not p.isdigit() or t not in topics or int(p) >= topics[t]:
                raise InvalidRequestError(f"consumer_commit: {k!r} is not a known topic-partition")
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidRequestError(f"consumer_commit: offset for {k!r} must be an integer >= 0, got {v!r}")
            out[(t, int(p))] = v
        return out

    def validate(self, cluster: Any) -> None:
        super().validate(cluster)
        self._offsets(cluster)

    def apply(self, cluster: Any) -> dict[str, Any]:
        c = _consumer(self.cmd, cluster, self.name)
        offsets = self._offsets(cluster)
        c.commit(offsets)
        sent = offsets if offsets is not None else {tp: c.positions[tp] for tp in c.owned if tp in c.positions}
        return {"consumer": self.name, "offsets": {f"{t}-{p}": o for (t, p), o in sorted(sent.items())}}


@dataclass(frozen=True)
class ConsumerLeave(_LiveConsumerCommand):
    cmd: ClassVar[str] = "consumer_leave"
    summary: ClassVar[str] = "KafkaConsumer.close: auto-commit if enabled, LeaveGroup (the group rebalances at once)."
    method: ClassVar[str] = "close"


@dataclass(frozen=True)
class ConsumerCrash(_LiveConsumerCommand):
    cmd: ClassVar[str] = "consumer_crash"
    summary: ClassVar[str] = ("Kill a consumer process: no commit, no LeaveGroup; the coordinator removes it "
                              "after session.timeout.ms.")
    method: ClassVar[str] = "crash"


@dataclass(frozen=True)
class ConsumerSlowHeartbeats(Command):
    cmd: ClassVar[str] = "consumer_slow_heartbeats"
    summary: ClassVar[str] = "Delay each heartbeat of a consumer by delay_ms (0 = normal): past the session timeout it is removed."
    name: str = _spec("str", doc="consumer name")
    delay_ms: int = _spec("int", low=0, high=MAX_ADVANCE_MS, doc="extra delay before each heartbeat is sent")

    def validate(self, cluster: Any) -> None:
        _consumer(self.cmd, cluster, self.name)

    def apply(self, cluster: Any) -> dict[str, Any]:
        _consumer(self.cmd, cluster, self.name).heartbeat_delay_ms = self.delay_ms
        return {"consumer": self.name, "delay_ms": self.delay_ms}


@dataclass(frozen=True)
class AddPartitions(Command):
    cmd: ClassVar[str] = "add_partitions"
    summary: ClassVar[str] = "Grow a topic to `count` partitions (groups subscribed to it rebalance)."
    topic: str = _spec("topic", doc="topic name")
    count: int = _spec("int", low=1, high=MAX_PARTITIONS, doc="new total number of partitions")

    def validate(self, cluster: Any) -> None:
        topics = _topics(cluster)
        if self.topic not in topics:
            raise UnknownTopicOrPartitionError(f"add_partitions: unknown topic {self.topic!r}")
        if self.count <= topics[self.topic]:
            raise InvalidRequestError(f"add_partitions: {self.topic!r} has {topics[self.topic]} partitions; the "
                                      f"count can only grow (asked for {self.count})")

    def apply(self, cluster: Any) -> dict[str, Any]:
        from .consumer import add_partitions
        added = add_partitions(cluster, self.topic, self.count)
        return {"topic": self.topic, "count": self.count, "added": {str(k): v for k, v in added.items()}}


@dataclass(frozen=True)
class RunCleaner(Command):
    cmd: ClassVar[str] = "run_cleaner"
    summary: ClassVar[str] = "Run each live broker's log cleaner once now (it also runs every log.cleaner.backoff.ms)."

    def apply(self, cluster: Any) -> dict[str, Any]:
        svc = getattr(cluster, "groups", None)
        if svc is not None:
            return {"cleaned": svc.cleaner.run()}
        from .consumer import ClusterCleaner
        cleaner = ClusterCleaner.__new__(ClusterCleaner)
        cleaner.cluster = cluster
        return {"cleaned": cleaner.run()}


__all__ += ["ConfigureGroups", "ConsumerJoin", "ConsumerPoll", "ConsumerCommit", "ConsumerLeave", "ConsumerCrash",
            "ConsumerSlowHeartbeats", "AddPartitions", "RunCleaner"]
