"""The consumer-side partition assignors Kafka's group leader runs: ``range``, ``roundrobin``,
``sticky`` and ``cooperative-sticky`` — the same answer as the Java client's
``RangeAssignor``, ``RoundRobinAssignor`` and ``AbstractStickyAssignor`` (with its two builders,
the "constrained" one when every member subscribes to the same topics and the "general" one
otherwise) for the same members, subscriptions, owned partitions and partition counts. Racks
are not modelled (no member has a rack, so Kafka's rack-aware paths are off too).

Inputs: ``subscriptions`` maps member id → :class:`Subscription`, *in the order the members
joined* (the order of the JoinGroup response; Java iterates a ``HashMap`` built in that order,
see :mod:`engine.group.java`); ``partitions`` maps topic → partition count. Output: member id
→ list of ``(topic, partition)`` sorted by topic (Java's string order) then partition; every
member appears, possibly with an empty list.

Orders that decide the answer:
- members: static members (``group.instance.id``) first, by instance id; then by member id,
  both in Java's ``String.compareTo`` order;
- range: per topic, the first ``P % C`` subscribed members get ``P // C + 1`` consecutive
  partitions, the rest ``P // C``;
- roundrobin: every subscribed partition, sorted by topic then number, dealt to members in
  a cycle, skipping members not subscribed to the partition's topic;
- sticky: see :class:`_Constrained` and :class:`_General`.

kafka-python 3.0.12 agrees with Kafka on range and on roundrobin when every member subscribes
to the same topics (with different subscriptions its roundrobin raises ``KeyError`` as soon
as the cycle reaches a member that is not subscribed to the partition's topic). Its sticky assignor is a port
of Kafka's pre-2.4 general algorithm only (no constrained builder), so with equal
subscriptions it can hand out different (equally balanced) partitions than Kafka; this
module follows Kafka. The tests compare range/roundrobin with kafka-python exactly and sticky
on balance and stickiness.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..errors import InvalidRequestError
from .java import hash_map_order, java_str_key, string_hash, topic_partition_hash

__all__ = ["Subscription", "assign", "STRATEGIES", "EAGER_STRATEGIES", "transferring_partitions",
           "range_assign", "roundrobin_assign", "sticky_assign"]

TP = tuple[str, int]
STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
EAGER_STRATEGIES = ("range", "roundrobin", "sticky")
DEFAULT_GENERATION = -1


@dataclass(frozen=True)
class Subscription:
    """What a member sends in JoinGroup: its topics (in its own order), the partitions it
    owns now and the generation it owned them in (sticky / cooperative-sticky only; -1 =
    none), and its ``group.instance.id`` if static."""

    topics: tuple[str, ...]
    owned: tuple[TP, ...] = ()
    generation: int = DEFAULT_GENERATION
    group_instance_id: str | None = None


def _member_key(item: tuple[str, Subscription]):
    member, sub = item
    if sub.group_instance_id is not None:
        return (0, java_str_key(sub.group_instance_id))
    return (1, java_str_key(member))


def _sorted_members(subs: Mapping[str, Subscription]) -> list[str]:
    return [m for m, _ in sorted(subs.items(), key=_member_key)]


def _tp_key(tp: TP):
    return (java_str_key(tp[0]), tp[1])


def _partitions_per_topic(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> dict[str, int]:
    """Kafka only looks at topics some member subscribes to and that exist in the metadata."""
    wanted = {t for s in subs.values() for t in s.topics}
    return {t: n for t, n in partitions.items() if t in wanted and n > 0}


def _finish(result: Mapping[str, Iterable[TP]], subs: Mapping[str, Subscription]) -> dict[str, list[TP]]:
    topic_keys: dict[str, bytes] = {}

    def key(tp: TP):
        k = topic_keys.get(tp[0])
        if k is None:
            k = topic_keys[tp[0]] = java_str_key(tp[0])
        return (k, tp[1])
    return {m: sorted(result.get(m, ()), key=key) for m in subs}


# ---------------------------------------------------------------------------- range
def range_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> dict[str, list[TP]]:
    per_topic = _partitions_per_topic(subs, partitions)
    out: dict[str, list[TP]] = {m: [] for m in subs}
    order = _sorted_members(subs)
    topic_sets = {m: set(subs[m].topics) for m in order}
    for topic, count in per_topic.items():
        members = [m for m in order if topic in topic_sets[m]]
        if not members:
            continue
        q, extra = divmod(count, len(members))
        start = 0
        for i, m in enumerate(members):
            n = q + (1 if i < extra else 0)
            if n == 1:
                out[m].append((topic, start))
            elif n:
                out[m].extend([(topic, p) for p in range(start, start + n)])
            start += n
    return _finish(out, subs)


# ---------------------------------------------------------------------------- roundrobin
def roundrobin_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> dict[str, list[TP]]:
    per_topic = _partitions_per_topic(subs, partitions)
    out: dict[str, list[TP]] = {m: [] for m in subs}
    order = _sorted_members(subs)
    topic_sets = {m: set(subs[m].topics) for m in order}
    i = 0
    for topic in sorted(per_topic, key=java_str_key):
        for p in range(per_topic[topic]):
            while topic not in topic_sets[order[i % len(order)]]:
                i += 1
            out[order[i % len(order)]].append((topic, p))
            i += 1
    return _finish(out, subs)


# ---------------------------------------------------------------------------- sticky
class _SortedSubs:
    """Java's ``TreeSet`` of members ordered by (assigned count, member id)."""

    def __init__(self, assignment: dict[str, list[TP]]) -> None:
        self.a = assignment
        self.items: list[tuple[int, bytes, str]] = []

    def _key(self, m: str) -> tuple[int, bytes, str]:
        return (len(self.a[m]), java_str_key(m), m)

    def add(self, m: str) -> None:
        import bisect
        k = self._key(m)
        i = bisect.bisect_left(self.items, k)
        if i < len(self.items) and self.items[i] == k:
            return
        self.items.insert(i, k)

    def remove(self, m: str) -> None:
        import bisect
        k = self._key(m)
        i = bisect.bisect_left(self.items, k)
        if i < len(self.items) and self.items[i] == k:
            del self.items[i]

    def __iter__(self):
        return iter([k[2] for k in self.items])

    def first(self) -> str:
        return self.items[0][2]

    def last(self) -> str:
        return self.items[-1][2]


def _owned_partitions(subs: Mapping[str, Subscription], per_topic: Mapping[str, int]):
    """``allSubscriptionsEqual``: each member's valid owned partitions (a partition claimed by
    two members keeps the higher generation; two claims in one generation drop it from
    both), whether every subscription is the same, and the max generation."""
    owned: dict[str, list[TP]] = {}
    multiple: set[TP] = set()
    previous_owner: dict[TP, str] = {}
    equal = True
    first: set[str] = set()
    max_generation = DEFAULT_GENERATION
    for m in hash_map_order(list(subs), string_hash):
        sub = subs[m]
        topics = set(sub.topics)
        if not first:  # Java fills the set from the first member with any topic
            first = topics
        elif equal and topics != first:
            equal = False
        gen = sub.generation
        max_generation = max(max_generation, gen)
        mine: list[TP] = []
        owned[m] = mine
        for tp in sub.owned:
            if tp[0] not in per_topic:
                continue
            other = previous_owner.get(tp)
            if other is None:
                mine.append(tp)
                previous_owner[tp] = m
            else:
                other_gen = subs[other].generation
                if gen == other_gen:
                    multiple.add(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    previous_owner[tp] = m
                elif gen > other_gen:
                    mine.append(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    previous_owner[tp] = m
    return owned, multiple, equal, max_generation


class _Constrained:
    """Every member subscribes to the same topics. Quotas ``min = P // C``, ``max = ceil(P/C)``;
    members keep owned partitions (lowest partition number first, then topic) up to ``max``
    while fewer than ``P % C`` members are above ``min``, else up to ``min``; the rest are
    dealt round-robin (topic order, then number) to members sorted by id, under-``min`` first."""

    def __init__(self, per_topic: Mapping[str, int], owned: dict[str, list[TP]], multiple: set[TP]) -> None:
        self.per_topic = per_topic
        self.current = owned
        self.multiple = multiple
        self.total = sum(per_topic.values())
        n = len(owned)
        self.min_q = self.total // n
        self.max_q = -(-self.total // n)
        self.expected_over = self.total % n
        self.current_over = 0
        self.assignment: dict[str, list[TP]] = {m: [] for m in owned}
        self.maybe_revoked: dict[TP, str] = {}
        self.transferring: dict[TP, str] = {}

    def build(self) -> dict[str, list[TP]]:
        under: list[str] = []
        exactly_min: list[str] = []
        assigned: set[TP] = set()
        for m in hash_map_order(list(self.current), string_hash):
            mine = sorted(self.current[m], key=lambda tp: (tp[1], java_str_key(tp[0])))
            mine = [tp for tp in mine if tp not in self.multiple]
            target = self.assignment[m]
            if len(mine) < self.min_q:
                target.extend(mine)
                assigned.update(mine)
                under.append(m)
            elif len(mine) >= self.max_q and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    exactly_min.clear()
                target.extend(mine[:self.max_q])
                assigned.update(mine[:self.max_q])
                for tp in mine[self.max_q:]:
                    self.maybe_revoked[tp] = m
            else:
                target.extend(mine[:self.min_q])
                assigned.update(mine[:self.min_q])
                for tp in mine[self.min_q:]:
                    self.maybe_revoked[tp] = m
                if self.current_over < self.expected_over:
                    exactly_min.append(m)
        unassigned = [(t, p) for t in sorted(self.per_topic, key=java_str_key) for p in range(self.per_topic[t])
                      if (t, p) not in assigned]
        under.sort(key=java_str_key)
        exactly_min.sort(key=java_str_key)
        self._round_robin(unassigned, under, exactly_min)
        return self.assignment

    def _round_robin(self, unassigned: list[TP], under: list[str], exactly_min: list[str]) -> None:
        i = 0  # Java's iterator over the (shrinking) under-min list
        for tp in unassigned:
            if i < len(under):
                m = under[i]
                from_under = True
            else:
                if not under and not exactly_min:
                    raise InvalidRequestError("sticky assignor: no member left to take partition "
                                              f"{tp[0]}-{tp[1]} (impossible state)")
                if not under:
                    m = exactly_min.pop(0)
                    from_under = False
                else:
                    i = 0
                    m = under[0]
                    from_under = True
            count = self._assign_new(tp, m)
            if count == self.min_q and from_under:
                del under[i]
                exactly_min.append(m)
            else:
                if from_under:
                    i += 1
                if count == self.max_q:
                    self.current_over += 1

    def _assign_new(self, tp: TP, m: str) -> int:
        self.assignment[m].append(tp)
        prev = self.maybe_revoked.get(tp)
        if (prev is not None and prev != m) or tp in self.multiple:
            self.transferring[tp] = m
        return len(self.assignment[m])


class _Movements:
    """``PartitionMovements``: which partitions moved between which members during balancing,
    so a partition moving back prefers the one that came the other way."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], dict[TP, None]]] = {}
        self.max_sizes: dict[tuple[str, tuple[str, str]], int] = {}
        self.moves: dict[TP, tuple[str, str]] = {}

    def _remove(self, tp: TP) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        topic_moves = self.by_topic[tp[0]]
        del topic_moves[pair][tp]
        if not topic_moves[pair]:
            del topic_moves[pair]
        if not topic_moves:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: TP, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        s = self.by_topic.setdefault(tp[0], {}).setdefault(pair, {})
        if not s:
            self.max_sizes[(tp[0], pair)] = 0
        s[tp] = None
        key = (tp[0], pair)
        self.max_sizes[key] = max(self.max_sizes.get(key, 0), len(s))

    def move(self, tp: TP, old: str, new: str) -> None:
        if tp in self.moves:
            existing = self._remove(tp)
            if existing[0] != new:
                self._add(tp, (existing[0], new))
        else:
            self._add(tp, (old, new))

    def actual_partition_to_move(self, tp: TP, old: str, new: str) -> TP:
        topic_moves = self.by_topic.get(tp[0])
        if topic_moves is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = (new, old)
        if reverse not in topic_moves:
            return tp
        s = list(topic_moves[reverse])
        return hash_map_order(s, lambda x: topic_partition_hash(*x),
                              max(self.max_sizes.get((tp[0], reverse), len(s)), len(s)))[0]


class _General:
    """Members subscribe to different topics: Kafka's general sticky algorithm (assign each
    unassigned partition to the least-loaded eligible member, then move partitions from
    members with more than one partition above an eligible member until balanced, keeping
    the pre-balance assignment when balancing did not improve the balance score)."""

    def __init__(self, per_topic: Mapping[str, int], owned: dict[str, list[TP]],
                 subs: Mapping[str, Subscription], max_generation: int) -> None:
        self.per_topic = per_topic
        self.subs = subs
        self.current = owned
        self.max_generation = max_generation
        self.total = sum(per_topic.values())
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for m in hash_map_order(list(subs), string_hash):
            mine: list[str] = []
            self.consumer_topics[m] = mine
            for t in subs[m].topics:
                if t in per_topic:
                    mine.append(t)
                    self.topic_consumers[t].append(m)
            self.current.setdefault(m, [])
        self.partition_consumer: dict[TP, str] = {tp: m for m, tps in self.current.items() for tp in tps}
        topics = sorted(per_topic, key=lambda t: (len(self.topic_consumers[t]), java_str_key(t)))
        self.sorted_all = [(t, p) for t in topics for p in range(per_topic[t])]
        self.sorted_subs = _SortedSubs(self.current)
        self.revocation_required = False
        self.movements = _Movements()

    def build(self) -> dict[str, list[TP]]:
        prev: dict[TP, tuple[str, int]] = {}
        for m in hash_map_order(list(self.subs), string_hash):
            gen = self.subs[m].generation
            if gen < self.max_generation:
                for tp in self.subs[m].owned:
                    if tp not in prev or gen > prev[tp][1]:
                        prev[tp] = (m, gen)
        assigned: set[TP] = set()
        for m in list(self.current):
            topics = set(self.subs[m].topics)
            keep = []
            for tp in self.current[m]:
                if tp[0] not in self.topic_consumers:
                    self.partition_consumer.pop(tp, None)
                elif tp[0] not in topics:
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    assigned.add(tp)
            self.current[m] = keep
        unassigned = [tp for tp in self.sorted_all if tp not in assigned]
        for m in self.current:
            self.sorted_subs.add(m)
        self._balance(prev, unassigned)
        return self.current

    def _max_size(self, m: str) -> int:
        return sum(self.per_topic[t] for t in self.consumer_topics[m])

    def _is_balanced(self) -> bool:
        cur = self.current
        if len(cur[self.sorted_subs.first()]) >= len(cur[self.sorted_subs.last()]) - 1:
            return True
        owner = {tp: m for m, tps in cur.items() for tp in tps}
        for m in self.sorted_subs:
            n = len(cur[m])
            if n == self._max_size(m):
                continue
            mine = set(cur[m])
            for t in self.consumer_topics[m]:
                for p in range(self.per_topic[t]):
                    tp = (t, p)
                    if tp not in mine:
                        other = owner.get(tp)
                        if other is not None and n + 1 < len(cur[other]):
                            return False
        return True

    @staticmethod
    def _score(a: Mapping[str, list[TP]]) -> int:
        sizes = [len(v) for v in a.values()]
        return sum(abs(x - y) for i, x in enumerate(sizes) for y in sizes[i + 1:])

    def _maybe_assign(self, tp: TP) -> None:
        for m in self.sorted_subs:
            if tp[0] in self.consumer_topics[m]:
                self.sorted_subs.remove(m)
                self.current[m].append(tp)
                self.partition_consumer[tp] = m
                self.sorted_subs.add(m)
                return

    def _can_consumer_participate(self, m: str) -> bool:
        if len(self.current[m]) < self._max_size(m):
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in self.current[m])

    def _balance(self, prev: dict[TP, tuple[str, int]], unassigned: list[TP]) -> None:
        initializing = not self.current[self.sorted_subs.last()]
        for tp in unassigned:
            if self.topic_consumers[tp[0]]:
                self._maybe_assign(tp)
        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        self.sorted_all = [tp for tp in self.sorted_all if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: dict[str, list[TP]] = {}
        for m in hash_map_order(list(self.consumer_topics), string_hash):
            if not self._can_consumer_participate(m):
                self.sorted_subs.remove(m)
                fixed[m] = self.current.pop(m)
        pre = {m: list(v) for m, v in self.current.items()}
        pre_owner = dict(self.partition_consumer)
        if not self.revocation_required:
            self._perform(unassigned, prev)
        performed = self._perform(self.sorted_all, prev)
        if not initializing and performed and self._score(self.current) >= self._score(pre):
            for m in list(self.current):
                self.sorted_subs.remove(m)
            self.current.clear()
            self.current.update({m: list(v) for m, v in pre.items()})
            for m in self.current:
                self.sorted_subs.add(m)
            self.partition_consumer = pre_owner
        for m, tps in fixed.items():
            self.current[m] = tps
            self.sorted_subs.add(m)

    def _perform(self, partitions: list[TP], prev: dict[TP, tuple[str, int]]) -> bool:
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                m = self.partition_consumer.get(tp)
                if m is None:
                    continue
                if tp in prev and prev[tp][0] in self.current and \
                        len(self.current[m]) > len(self.current[prev[tp][0]]) + 1:
                    self._reassign(tp, prev[tp][0])
                    performed = modified = True
                    continue
                for other in self.topic_consumers[tp[0]]:
                    if other in self.current and len(self.current[m]) > len(self.current[other]) + 1:
                        new = next(c for c in self.sorted_subs if tp[0] in self.consumer_topics[c])
                        self._reassign(tp, new)
                        performed = modified = True
                        break
            if not modified:
                return performed

    def _reassign(self, tp: TP, new: str) -> None:
        old = self.partition_consumer[tp]
        tp = self.movements.actual_partition_to_move(tp, old, new)
        old = self.partition_consumer[tp]
        self.sorted_subs.remove(old)
        self.sorted_subs.remove(new)
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.partition_consumer[tp] = new
        self.sorted_subs.add(new)
        self.sorted_subs.add(old)


def _sticky(subs: Mapping[str, Subscription], partitions: Mapping[str, int]):
    per_topic = _partitions_per_topic(subs, partitions)
    owned, multiple, equal, max_gen = _owned_partitions(subs, per_topic)
    if equal:
        builder = _Constrained(per_topic, owned, multiple)
        return builder.build(), builder.transferring
    return _General(per_topic, owned, subs, max_gen).build(), None


def transferring_partitions(subs: Mapping[str, Subscription], target: Mapping[str, list[TP]]) -> dict[TP, str]:
    """Partitions the target gives to a member other than the one owning them now (and which
    that owner loses): cooperative-sticky holds them back for a second rebalance."""
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for m, tps in target.items():
        owned = set(subs[m].owned)
        mine = set(tps)
        added.update({tp: m for tp in tps if tp not in owned})
        revoked.update(tp for tp in owned if tp not in mine)
    return {tp: m for tp, m in added.items() if tp in revoked}


def sticky_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int], *,
                  cooperative: bool = False) -> dict[str, list[TP]]:
    result, transferring = _sticky(subs, partitions)
    if cooperative:
        if transferring is None:
            transferring = transferring_partitions(subs, result)
        for tp, m in transferring.items():
            if tp in result[m]:
                result[m].remove(tp)
    return _finish(result, subs)


def assign(strategy: str, subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> dict[str, list[TP]]:
    """Run one assignor. ``InvalidRequestError`` for an unknown strategy or bad input."""
    _validate(subs, partitions)
    if strategy == "range":
        return range_assign(subs, partitions)
    if strategy == "roundrobin":
        return roundrobin_assign(subs, partitions)
    if strategy == "sticky":
        return sticky_assign(subs, partitions)
    if strategy == "cooperative-sticky":
        return sticky_assign(subs, partitions, cooperative=True)
    raise InvalidRequestError(f"unknown assignment strategy {strategy!r}; known: {', '.join(STRATEGIES)}")


def _validate(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> None:
    if not subs:
        raise InvalidRequestError("a group needs at least one member to assign partitions to")
    for t, n in partitions.items():
        if not isinstance(t, str) or not t or isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidRequestError(f"partition count of topic {t!r} must be a non-negative integer, got {n!r}")
    for m, s in subs.items():
        if not isinstance(m, str) or not m:
            raise InvalidRequestError(f"member ids must be non-empty strings, got {m!r}")
        for tp in s.owned:
            if tp[0] in partitions and not 0 <= tp[1] < partitions[tp[0]]:
                raise InvalidRequestError(
                    f"member {m!r} owns {tp[0]}-{tp[1]}, but topic {tp[0]!r} has {partitions[tp[0]]} partitions")
