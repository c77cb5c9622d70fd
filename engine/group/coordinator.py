"""The group coordinator's side of the classic consumer-group protocol (reference §7.2),
for the groups whose ``__consumer_offsets`` partition one broker leads.

States: Empty → PreparingRebalance → CompletingRebalance → Stable (→ PreparingRebalance …).

* **JoinGroup**: a new member's first JoinGroup is answered MEMBER_ID_REQUIRED with its id
  (``<client>-<n>``; KIP-394), and it joins again with that id; the group goes to
  PreparingRebalance (an Empty group waits ``group.initial.rebalance.delay.ms``, extended
  while members keep arriving, up to the rebalance timeout). The join phase ends when every
  known member has (re)joined, or at the rebalance timeout (``max.poll.interval.ms`` of the
  members), when laggards are removed. Then the generation goes up by one, the protocol is
  the one every member supports with the most votes (each member votes for its first
  supported choice), the leader stays if it rejoined (else the first member), and every
  member gets its JoinGroup response; only the leader's lists the members' subscriptions.
* **SyncGroup**: followers wait for the leader's, which carries everyone's assignment; then
  the group is Stable. Wrong generation → ILLEGAL_GENERATION, unknown member →
  UNKNOWN_MEMBER_ID, during a join phase → REBALANCE_IN_PROGRESS.
* **Heartbeat**: NONE while Stable (or CompletingRebalance) with the right generation,
  REBALANCE_IN_PROGRESS during a join phase; no heartbeat for ``session.timeout.ms`` →
  the member is removed and the group rebalances.
* **LeaveGroup**: the member is removed and the group rebalances.
* **OffsetCommit**: from a member of the current generation (also accepted during
  PreparingRebalance), or from a group-less consumer (generation -1, no member id) when the
  group is Empty; refused with REBALANCE_IN_PROGRESS while CompletingRebalance.

The coordinator never parses subscriptions or assignments; the consumers compute them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .events import GroupStateChanged, JoinGroupCompleted, MemberRemoved, RebalanceStarted, SyncGroupCompleted

__all__ = ["GroupCoordinator", "Group", "Member", "GROUP_MIN_SESSION_TIMEOUT_MS", "GROUP_MAX_SESSION_TIMEOUT_MS",
           "GROUP_INITIAL_REBALANCE_DELAY_MS", "store_error"]

GROUP_MIN_SESSION_TIMEOUT_MS = 6000
GROUP_MAX_SESSION_TIMEOUT_MS = 1800000
GROUP_INITIAL_REBALANCE_DELAY_MS = 3000

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"


def store_error(append_error: str | None) -> str | None:
    """What SyncGroup answers when the group's record could not be appended (Kafka's
    ``GroupMetadataManager.storeGroup``): the partition or its replicas unavailable →
    COORDINATOR_NOT_AVAILABLE; no longer the leader → NOT_COORDINATOR; the acks=all wait
    timed out → REBALANCE_IN_PROGRESS; a record too large for the log (``max.message.bytes``
    or ``segment.bytes``) → UNKNOWN_SERVER_ERROR, which the Java consumer does not retry
    (``poll`` throws); anything else as it is."""
    if append_error is None:
        return None
    if append_error in ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"):
        return "COORDINATOR_NOT_AVAILABLE"
    if append_error in ("NOT_LEADER_OR_FOLLOWER", "KAFKA_STORAGE_ERROR"):
        return "NOT_COORDINATOR"
    if append_error == "REQUEST_TIMED_OUT":
        return "REBALANCE_IN_PROGRESS"
    if append_error in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_FETCH_SIZE"):
        return "UNKNOWN_SERVER_ERROR"
    return append_error


@dataclass
class Member:
    member_id: str
    client: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list                      # [(name, subscription)], in preference order
    last_heartbeat_ms: int = 0
    awaiting_join: bool = False
    awaiting_sync: bool = False
    assignment: list = field(default_factory=list)
    expiry_task: Any = None


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    members: dict = field(default_factory=dict)   # member id -> Member, in join order
    join_task: Any = None
    join_deadline_ms: int = 0
    last_join_ms: int = 0
    next_member: int = 0
    pending: set = field(default_factory=set)     # member ids handed out by MEMBER_ID_REQUIRED
    storing: bool = False                         # the leader's assignment is being written

    def to_dict(self) -> dict:
        return {"group": self.group_id, "state": self.state, "generation": self.generation,
                "protocol": self.protocol, "leader": self.leader,
                "members": {m.member_id: {"client": m.client, "assignment": [list(tp) for tp in m.assignment],
                                          "last_heartbeat_ms": m.last_heartbeat_ms,
                                          "session_timeout_ms": m.session_timeout_ms}
                            for m in self.members.values()}}


class GroupCoordinator:
    """Groups coordinated by one broker (one incarnation, one leader epoch of its offsets
    partitions). ``reply(consumer, kind, payload)`` delivers a response to a consumer
    (the caller models the network); ``scheduler`` gives time and timers; ``emit`` events."""

    def __init__(self, broker: int, scheduler: Any, emit: Callable[[Any], None],
                 reply: Callable[[str, str, dict], None], initial_rebalance_delay_ms: int,
                 guard: Callable[[str], bool] | None = None,
                 store: Callable[["Group"], None] | None = None) -> None:
        self.broker = broker
        # store(group) appends the group's GroupMetadata record; the caller answers through
        # group_stored(group id, generation, error) once it is acknowledged (or failed).
        self.store = store
        self.guard = guard  # guard(group) -> is this still the group's coordinator (broker up, still leader)?
        self.scheduler = scheduler
        self.emit = emit
        self.reply = reply
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.groups: dict[str, Group] = {}
        self.active = True

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def shutdown(self) -> None:
        """The broker process is gone: drop every group and timer."""
        self.active = False
        for gid in list(self.groups):
            self.unload(gid)

    # ---- state ---------------------------------------------------------------------------
    def _current(self, group_id: str) -> Group | None:
        """The group, if this broker still coordinates it; else its timers are dropped (Kafka
        unloads a partition's groups when the broker stops leading it)."""
        g = self.groups.get(group_id)
        if g is None or not self.active:
            return None
        if self.guard is not None and not self.guard(group_id):
            self.unload(group_id)
            return None
        return g

    def unload(self, group_id: str) -> None:
        g = self.groups.pop(group_id, None)
        if g is not None:
            self.scheduler.cancel(g.join_task)
            for m in g.members.values():
                self.scheduler.cancel(m.expiry_task)

    def _set_state(self, g: Group, state: str) -> None:
        if g.state != state:
            old = g.state
            g.state = state
            self.emit(GroupStateChanged(g.group_id, self.broker, old, state, g.generation))

    def _now(self) -> int:
        return self.scheduler.now_ms()

    def _arm_expiry(self, g: Group, m: Member) -> None:
        self.scheduler.cancel(m.expiry_task)
        m.expiry_task = self.scheduler.schedule(m.session_timeout_ms, self._expire, g.group_id, m.member_id,
                                                name=f"session-expiry {g.group_id}/{m.member_id}")

    def _expire(self, group_id: str, member_id: str) -> None:
        g = self._current(group_id)
        if g is None or member_id not in g.members:
            return
        m = g.members[member_id]
        if m.awaiting_join:
            return  # a pending JoinGroup keeps the member alive; the rebalance timeout governs
        if self._now() - m.last_heartbeat_ms >= m.session_timeout_ms:
            self._remove(g, m, "session_timeout")
        else:
            self._arm_expiry(g, m)

    def _remove(self, g: Group, m: Member, reason: str) -> None:
        self.scheduler.cancel(m.expiry_task)
        del g.members[m.member_id]
        self.emit(MemberRemoved(g.group_id, self.broker, m.member_id, reason))
        if g.leader == m.member_id:
            g.leader = next(iter(g.members), None)
        if g.state in (STABLE, COMPLETING):
            self._prepare(g, reason, m.member_id)
        elif g.state == PREPARING:
            self._maybe_complete_join(g)

    def _prepare(self, g: Group, reason: str, member: str) -> None:
        if g.state == COMPLETING:
            # a sync in flight is cut short: followers waiting get REBALANCE_IN_PROGRESS
            for other in g.members.values():
                if other.awaiting_sync:
                    other.awaiting_sync = False
                    self.reply(other.client, "sync", {"error": "REBALANCE_IN_PROGRESS"})
        was_empty = g.state == EMPTY
        g.storing = False
        self._set_state(g, PREPARING)
        self.emit(RebalanceStarted(g.group_id, self.broker, g.generation, reason, member))
        now = self._now()
        timeout = max((m.rebalance_timeout_ms for m in g.members.values()), default=0)
        self.scheduler.cancel(g.join_task)
        if was_empty:
            g.join_deadline_ms = now + timeout
            delay = min(self.initial_rebalance_delay_ms, timeout)
            g.join_task = self.scheduler.schedule(delay, self._initial_join_due, g.group_id,
                                                  name=f"initial-join {g.group_id}")
        else:
            g.join_deadline_ms = now + timeout
            g.join_task = self.scheduler.schedule(timeout, self._join_deadline, g.group_id,
                                                  name=f"join-deadline {g.group_id}")
            self._maybe_complete_join(g)

    def _initial_join_due(self, group_id: str) -> None:
        g = self._current(group_id)
        if g is None or g.state != PREPARING:
            return
        now = self._now()
        last_join = g.last_join_ms
        if now - last_join < self.initial_rebalance_delay_ms and now < g.join_deadline_ms:
            # members kept arriving: wait one more delay (bounded by the rebalance timeout)
            wait = min(self.initial_rebalance_delay_ms - (now - last_join), g.join_deadline_ms - now)
            g.join_task = self.scheduler.schedule(wait, self._initial_join_due, group_id,
                                                  name=f"initial-join {group_id}")
            return
        self._complete_join(g)

    def _join_deadline(self, group_id: str) -> None:
        g = self._current(group_id)
        if g is None or g.state != PREPARING:
            return
        self._complete_join(g)

    def _maybe_complete_join(self, g: Group) -> None:
        if g.state == PREPARING and g.join_task is not None and all(m.awaiting_join for m in g.members.values()) \
                and not getattr(g.join_task, "name", "").startswith("initial-join"):
            self.scheduler.cancel(g.join_task)
            self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        removed = []
        for m in list(g.members.values()):
            if not m.awaiting_join:
                self.scheduler.cancel(m.expiry_task)
                del g.members[m.member_id]
                removed.append(m.member_id)
                self.emit(MemberRemoved(g.group_id, self.broker, m.member_id, "rebalance_timeout"))
        g.join_task = None
        g.generation += 1
        if not g.members:
            g.protocol = g.leader = None
            self.emit(JoinGroupCompleted(g.group_id, self.broker, g.generation, None, None, [], removed))
            self._set_state(g, EMPTY)
            if self.store is not None:
                self.store(g)  # the Empty group's record: its generation, no members
            return
        g.protocol = self._select_protocol(g)
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        self.emit(JoinGroupCompleted(g.group_id, self.broker, g.generation, g.protocol, g.leader,
                                     list(g.members), removed))
        self._set_state(g, COMPLETING)
        subs = [(m.member_id, dict(m.protocols)[g.protocol]) for m in g.members.values()]
        now = self._now()
        for m in g.members.values():
            m.awaiting_join = False
            m.assignment = []
            m.last_heartbeat_ms = now
            self._arm_expiry(g, m)
            self.reply(m.client, "join", {"error": "NONE", "generation": g.generation, "protocol": g.protocol,
                                          "leader": g.leader, "member_id": m.member_id,
                                          "members": subs if m.member_id == g.leader else []})

    @staticmethod
    def _select_protocol(g: Group) -> str:
        supported = None
        for m in g.members.values():
            names = [n for n, _ in m.protocols]
            supported = list(names) if supported is None else [n for n in supported if n in names]
        votes: dict[str, int] = {}
        for m in g.members.values():
            choice = next(n for n, _ in m.protocols if n in supported)
            votes[choice] = votes.get(choice, 0) + 1
        # most votes; ties go to the candidate listed first by the group's first member
        first = [n for n, _ in next(iter(g.members.values())).protocols if n in supported]
        return max(first, key=lambda n: (votes.get(n, 0), -first.index(n)))

    # ---- requests ------------------------------------------------------------------------
    def join_group(self, group_id: str, member_id: str, client: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocols: list) -> None:
        if not GROUP_MIN_SESSION_TIMEOUT_MS <= session_timeout_ms <= GROUP_MAX_SESSION_TIMEOUT_MS:
            self.reply(client, "join", {"error": "INVALID_SESSION_TIMEOUT"})
            return
        g = self.group(group_id)
        names = [n for n, _ in protocols]
        if g.members and not all(any(n in names for n, _ in m.protocols) for m in g.members.values() if
                                 m.member_id != member_id):
            self.reply(client, "join", {"error": "INCONSISTENT_GROUP_PROTOCOL"})
            return
        if not member_id:
            # JoinGroup v4+ (KIP-394): a new member first gets its id, then joins with it.
            g.next_member += 1
            member_id = f"{client}-{g.next_member}"
            g.pending.add(member_id)
            self.reply(client, "join", {"error": "MEMBER_ID_REQUIRED", "member_id": member_id})
            return
        if member_id not in g.members and member_id not in g.pending:
            self.reply(client, "join", {"error": "UNKNOWN_MEMBER_ID"})
            return
        now = self._now()
        new = member_id in g.pending
        if new:
            g.pending.discard(member_id)
            m = Member(member_id, client, session_timeout_ms, rebalance_timeout_ms, list(protocols), now)
            g.members[member_id] = m
        else:
            m = g.members[member_id]
            m.protocols = list(protocols)
            m.session_timeout_ms, m.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
            m.last_heartbeat_ms = now
        m.awaiting_join = True
        g.last_join_ms = now
        if g.state in (EMPTY, STABLE, COMPLETING):
            self._prepare(g, "member_joined" if new else "rejoin", member_id)
        else:
            self._maybe_complete_join(g)

    def sync_group(self, group_id: str, member_id: str, generation: int, assignment: dict | None) -> str | None:
        """Returns the client to answer at once with an error, or None when handled."""
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        if generation != g.generation:
            return "ILLEGAL_GENERATION"
        if g.state == PREPARING:
            return "REBALANCE_IN_PROGRESS"
        m = g.members[member_id]
        if g.state == STABLE:
            self.reply(m.client, "sync", {"error": "NONE", "generation": g.generation,
                                          "assignment": list(m.assignment)})
            return None
        m.awaiting_sync = True
        if member_id == g.leader and assignment is not None and not g.storing:
            for mid, other in g.members.items():
                other.assignment = [tuple(tp) for tp in assignment.get(mid, [])]
            if self.store is not None:
                # Kafka answers SyncGroup only once the group's record is written: a new
                # coordinator then loads this generation and its assignment.
                g.storing = True
                self.store(g)
                return None
            self._finish_sync(g)
        return None

    def group_stored(self, group_id: str, generation: int, error: str | None) -> None:
        g = self._current(group_id)
        if g is None or g.generation != generation or not g.storing:
            return
        g.storing = False
        if g.state != COMPLETING:
            return
        if error is None:
            self._finish_sync(g)
            return
        for other in g.members.values():  # Kafka: the store failed, every member rejoins
            other.assignment = []
            if other.awaiting_sync:
                other.awaiting_sync = False
                self.reply(other.client, "sync", {"error": error})
        self._prepare(g, "store_failed", g.leader or "")

    def load_group(self, group_id: str, generation: int, protocol: str | None, leader: str | None,
                   members: list) -> None:
        """A new coordinator loads the group's last GroupMetadata record: the group keeps its
        generation and assignment (Stable, or Empty without members); every member's session
        timer starts now. ``members``: [(member id, client, session ms, rebalance ms,
        subscription, assignment)]."""
        self.unload(group_id)
        g = self.group(group_id)
        g.generation, g.protocol, g.leader = generation, protocol, leader
        now = self._now()
        for mid, client, session, rebalance, sub, assigned in members:
            m = Member(mid, client, session, rebalance, [(protocol, sub)], now, assignment=[tuple(tp) for tp in assigned])
            g.members[mid] = m
            tail = mid.rsplit("-", 1)[-1]
            if tail.isdigit():
                g.next_member = max(g.next_member, int(tail))
            self._arm_expiry(g, m)
        self._set_state(g, STABLE if g.members else EMPTY)

    def _finish_sync(self, g: Group) -> None:
        self._set_state(g, STABLE)
        self.emit(SyncGroupCompleted(g.group_id, self.broker, g.generation,
                                     {mid: [list(tp) for tp in o.assignment] for mid, o in g.members.items()}))
        for other in g.members.values():
            if other.awaiting_sync:
                other.awaiting_sync = False
                self.reply(other.client, "sync", {"error": "NONE", "generation": g.generation,
                                                  "assignment": list(other.assignment)})

    def heartbeat(self, group_id: str, member_id: str, generation: int) -> str:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        m = g.members[member_id]
        if generation != g.generation:
            return "ILLEGAL_GENERATION"
        m.last_heartbeat_ms = self._now()
        self._arm_expiry(g, m)
        if g.state == PREPARING:
            return "REBALANCE_IN_PROGRESS"
        return "NONE"

    def leave_group(self, group_id: str, member_id: str) -> str:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        self._remove(g, g.members[member_id], "leave_group")
        return "NONE"

    def request_rejoin(self, group_id: str, member_id: str, reason: str) -> None:
        """The leader saw the metadata change (partition count): start a rebalance."""
        g = self.groups.get(group_id)
        if g is not None and member_id in g.members and g.state in (STABLE, COMPLETING):
            self._prepare(g, reason, member_id)

    def check_commit(self, group_id: str, member_id: str, generation: int) -> str:
        g = self.groups.get(group_id)
        if generation < 0 and not member_id:
            return "NONE" if g is None or g.state == EMPTY else "UNKNOWN_MEMBER_ID"
        if g is None or member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        if g.state == COMPLETING:
            return "REBALANCE_IN_PROGRESS"
        if generation != g.generation:
            return "ILLEGAL_GENERATION"
        return "NONE"
