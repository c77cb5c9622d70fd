"""Incremental fetch sessions (KIP-227): the leader's session cache and the fetcher's half.

A fetcher that asks a broker for many partitions again and again need not list them all each
time. Its first request is *full* (session id 0, epoch 0: every partition, with its fetch
offset); the broker answers with a session id and caches each partition's request
parameters and the last high watermark and log start offset it sent. Then every request is
*incremental* (that id, epoch 1, 2, ...): it carries only partitions that were added or whose
parameters changed, and names the ones to forget; the broker fetches every partition of the
session and answers only the partitions with something to say (records, a moved high
watermark or log start offset, an error). An idle partition then costs neither request nor
response bytes.

The request's (session id, epoch), as Kafka reads them (``FetchManager.newContext``):

==============  =====================  ============================================================
session id      epoch                  meaning
==============  =====================  ============================================================
0               -1 (FINAL)             sessionless full fetch (pre-KIP-227 clients)
0               0 (INITIAL)            full fetch; create a session if the cache has a slot
id              0                      close session ``id``, full fetch, create a new session
id              -1                     close session ``id``, sessionless full fetch
id              n > 0                  incremental fetch on ``id``; FETCH_SESSION_ID_NOT_FOUND
                                       if the broker has no such session, INVALID_FETCH_SESSION_EPOCH
                                       if its epoch is not ``n`` (the broker then expects n + 1)
==============  =====================  ============================================================

The cache (Kafka's ``FetchSessionCache``) holds at most ``max.incremental.fetch.session.cache.slots``
sessions (default 1,000). When it is full a new session may take the slot of

1. the least recently used session, if it was unused for more than the eviction time
   (Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``, 120 s): a *stale* one; else
2. the least valuable evictable session — ordered by (privileged, partitions, id): follower
   sessions are *privileged*, consumers' are not — if the new one is not less valuable.
   A privileged newcomer may evict any unprivileged session and privileged ones older than
   the eviction time; an unprivileged newcomer only sessions older than the eviction time.
   Whether a session is old enough is decided when it is used (``touch``), as in Kafka.

Nothing here reads a clock or a global random source: ``now`` is passed in and session ids
come from the ``rng`` the cache was built with, so a run replays exactly.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Iterator

__all__ = ["INVALID_SESSION_ID", "INITIAL_EPOCH", "FINAL_EPOCH", "DEFAULT_CACHE_SLOTS", "DEFAULT_EVICTION_MS",
           "next_epoch", "PartitionParams", "CachedPartition", "FetchSession", "FetchSessionCache",
           "FetchContext", "new_context", "FetchSessionHandler"]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT_MAX = 2**31 - 1
DEFAULT_CACHE_SLOTS = 1000          # max.incremental.fetch.session.cache.slots
DEFAULT_EVICTION_MS = 120_000       # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``): FINAL stays FINAL,
    the largest int wraps to 1 (0 means "new session", so it is skipped)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == INT_MAX:
        return 1
    return epoch + 1


class PartitionParams:
    """What a fetch request says about one partition (the fields a session caches)."""

    __slots__ = ("fetch_offset", "max_bytes", "leader_epoch", "log_start_offset", "last_fetched_epoch")

    def __init__(self, fetch_offset: int, max_bytes: int, leader_epoch: int = -1, log_start_offset: int = -1,
                 last_fetched_epoch: int = -1) -> None:
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.leader_epoch = leader_epoch
        self.log_start_offset = log_start_offset
        self.last_fetched_epoch = last_fetched_epoch

    def astuple(self) -> tuple:
        return (self.fetch_offset, self.max_bytes, self.leader_epoch, self.log_start_offset,
                self.last_fetched_epoch)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionParams) and self.astuple() == other.astuple()

    def __repr__(self) -> str:
        return f"PartitionParams{self.astuple()}"


class CachedPartition:
    """One partition of a session: the request parameters last sent for it and the high
    watermark and log start offset last answered (Kafka's ``CachedPartition``)."""

    __slots__ = ("params", "high_watermark", "log_start_offset")

    def __init__(self, params: PartitionParams, high_watermark: int = -1, log_start_offset: int = -1) -> None:
        self.params = params
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset

    def must_respond(self, answer: "Answer", update: bool) -> bool:
        """Does an incremental response have to carry this partition? Records, a moved high
        watermark or log start offset, a preferred read replica, an error: yes. An error also
        forgets the cached high watermark, so the partition is sent again once it clears."""
        size, hw, log_start, error, preferred = answer
        must = size > 0 or preferred >= 0
        if hw != self.high_watermark:
            must = True
            if update:
                self.high_watermark = hw
        if log_start != self.log_start_offset:
            must = True
            if update:
                self.log_start_offset = log_start
        if error:
            must = True
            if update:
                self.high_watermark = -1
        return must


# What a response says about one partition, as a session reads it:
# (record bytes, high watermark, log start offset, error?, preferred read replica or -1).
Answer = tuple


class FetchSession:
    """One cached session. ``partitions`` keeps its order: partitions answered with
    something move to the end, so a budget-limited response serves the others next time."""

    __slots__ = ("id", "privileged", "partitions", "creation_ms", "last_used_ms", "epoch", "cached_size",
                 "by_all", "by_privileged")

    def __init__(self, session_id: int, privileged: bool, partitions: dict, now: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[Hashable, CachedPartition] = partitions
        self.creation_ms = now
        self.last_used_ms = now
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1             # size when last touched; -1 = not in the cache
        self.by_all = False               # evictable by any new session (decided at touch)
        self.by_privileged = False        # evictable by a privileged new session (decided at touch)

    def evictable_key(self) -> tuple:
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: dict, forgotten: Iterable) -> tuple[list, list, list]:
        """Apply an incremental request: add or update the named partitions, drop the forgotten."""
        added, updated, removed = [], [], []
        parts = self.partitions
        for key, params in fetch_data.items():
            cached = parts.get(key)
            if cached is None:
                parts[key] = CachedPartition(params)
                added.append(key)
            else:
                cached.params = params
                updated.append(key)
        for key in forgotten:
            if parts.pop(key, None) is not None:
                removed.append(key)
        return added, updated, removed

    def state(self) -> dict:
        return {"id": self.id, "epoch": self.epoch, "privileged": self.privileged,
                "partitions": len(self.partitions), "creation_ms": self.creation_ms,
                "last_used_ms": self.last_used_ms}


class FetchSessionCache:
    """A broker's fetch sessions (Kafka's ``FetchSessionCache``); see the module docstring
    for the eviction rules. ``rng`` draws session ids (a ``random.Random``)."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_SLOTS, eviction_ms: int = DEFAULT_EVICTION_MS,
                 rng: Any = None) -> None:
        if rng is None:
            import random
            rng = random.Random(0)
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}
        self.num_partitions = 0
        self.evictions = 0

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    @property
    def size(self) -> int:
        return len(self.sessions)

    def new_session_id(self) -> int:
        while True:
            sid = self.rng.randint(1, INT_MAX - 1)
            if sid not in self.sessions:
                return sid

    def maybe_create_session(self, now: int, privileged: bool, size: int,
                             create_partitions: Callable[[], dict]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache is full and nothing may go."""
        if len(self.sessions) < self.max_entries or self.try_evict(privileged, (privileged, size, 0), now):
            session = FetchSession(self.new_session_id(), privileged, create_partitions(), now)
            self.sessions[session.id] = session
            self.touch(session, now)
            return session.id
        return INVALID_SESSION_ID

    def try_evict(self, privileged: bool, key: tuple, now: int) -> bool:
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - oldest.last_used_ms > self.eviction_ms:
            self.remove(oldest)
            self.evictions += 1
            return True
        if privileged:
            candidates = [s for s in self.sessions.values() if s.by_privileged]
        else:
            candidates = [s for s in self.sessions.values() if s.by_all]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        if key < victim.evictable_key():
            return False
        self.remove(victim)
        self.evictions += 1
        return True

    def remove(self, session: FetchSession | int) -> FetchSession | None:
        if not isinstance(session, FetchSession):
            session = self.sessions.get(session)
            if session is None:
                return None
        if self.sessions.pop(session.id, None) is None:
            return None
        self.num_partitions -= session.cached_size
        session.cached_size = -1
        session.by_all = session.by_privileged = False
        return session

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark ``session`` used at ``now`` and decide again who may evict it."""
        session.last_used_ms = now
        if session.cached_size != -1:
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        old = now - session.creation_ms > self.eviction_ms
        session.by_privileged = (not session.privileged) or old
        session.by_all = old
        self.num_partitions += session.cached_size

    def state(self) -> dict:
        return {"slots": self.max_entries, "eviction_ms": self.eviction_ms, "evictions": self.evictions,
                "partitions": self.num_partitions,
                "sessions": [self.sessions[k].state() for k in sorted(self.sessions)]}


class FetchContext:
    """How one fetch request is served (Kafka's ``FetchContext`` kinds): ``kind`` is
    "error", "sessionless", "full" or "incremental". ``partitions()`` lists what to read,
    ``respond(answers)`` returns (error name or None, session id, the keys to put in the
    response, in order)."""

    __slots__ = ("kind", "error", "cache", "session", "fetch_data", "privileged", "now", "req_epoch")

    def __init__(self, kind: str, cache: FetchSessionCache | None, fetch_data: dict, now: int,
                 privileged: bool = False, session: FetchSession | None = None, error: str | None = None,
                 req_epoch: int = 0) -> None:
        self.kind = kind
        self.cache = cache
        self.fetch_data = fetch_data
        self.now = now
        self.privileged = privileged
        self.session = session
        self.error = error
        self.req_epoch = req_epoch

    def partitions(self) -> Iterator[tuple[Hashable, PartitionParams]]:
        if self.kind == "incremental":
            return ((k, c.params) for k, c in list(self.session.partitions.items()))
        if self.kind == "error":
            return iter(())
        return iter(self.fetch_data.items())

    def fetch_offset(self, key: Hashable) -> int | None:
        if self.kind == "incremental":
            cached = self.session.partitions.get(key)
            return None if cached is None else cached.params.fetch_offset
        params = self.fetch_data.get(key)
        return None if params is None else params.fetch_offset

    def respond(self, answers: dict) -> tuple[str | None, int, list]:
        """``answers``: key → :data:`Answer`, for every partition of ``partitions()``."""
        if self.kind == "error":
            return self.error, INVALID_SESSION_ID, []
        if self.kind == "sessionless":
            return None, INVALID_SESSION_ID, list(answers)
        if self.kind == "full":
            fetch_data = self.fetch_data

            def create() -> dict:
                return {k: CachedPartition(fetch_data[k], a[1], a[2]) for k, a in answers.items()}

            sid = self.cache.maybe_create_session(self.now, self.privileged, len(answers), create)
            return None, sid, list(answers)
        session = self.session
        if session.epoch != next_epoch(self.req_epoch):
            # The session moved on between this request and its answer: a duplicate request.
            return "INVALID_FETCH_SESSION_EPOCH", session.id, []
        keep = []
        parts = session.partitions
        for key, answer in answers.items():
            cached = parts.get(key)
            if cached is not None and cached.must_respond(answer, True):
                keep.append(key)
                del parts[key]
                parts[key] = cached       # answered partitions go to the end of the order
        return None, session.id, keep


def new_context(cache: FetchSessionCache, now: int, session_id: int, epoch: int, fetch_data: dict,
                forgotten: Iterable, privileged: bool) -> FetchContext:
    """Kafka's ``FetchManager.newContext``: what kind of fetch this request is (see the
    module docstring's table). ``fetch_data``: key → PartitionParams, in request order."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)          # a full request closes the session it names
        if epoch == FINAL_EPOCH:
            return FetchContext("sessionless", cache, fetch_data, now, privileged)
        return FetchContext("full", cache, fetch_data, now, privileged)
    session = cache.get(session_id)
    if session is None:
        return FetchContext("error", cache, {}, now, privileged, error="FETCH_SESSION_ID_NOT_FOUND")
    if session.epoch != epoch:
        return FetchContext("error", cache, {}, now, privileged, error="INVALID_FETCH_SESSION_EPOCH")
    session.update(fetch_data, forgotten)
    if not session.partitions:
        cache.remove(session)
        return FetchContext("sessionless", cache, fetch_data, now, privileged)
    cache.touch(session, now)
    session.epoch = next_epoch(session.epoch)
    return FetchContext("incremental", cache, fetch_data, now, privileged, session=session, req_epoch=epoch)


class FetchSessionHandler:
    """The fetcher's half (Kafka's client ``FetchSessionHandler``): remembers the session the
    broker gave it and what it last sent for each partition, and builds the next request.

    ``build(wanted)`` (key → PartitionParams, everything the fetcher wants now) returns
    (session id, epoch, partitions to send, keys to forget); ``handle_response(error,
    session_id)`` moves the session on, or back to a full request after an error."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent: dict[Hashable, PartitionParams] = {}    # the session's partitions as the broker has them
        self._pending: dict[Hashable, PartitionParams] | None = None
        self._full = True

    def build(self, wanted: dict) -> tuple[int, int, dict, list]:
        full = self.epoch == INITIAL_EPOCH or self.epoch == FINAL_EPOCH
        self._full = full
        self._pending = dict(wanted)
        if full:
            return self.session_id, self.epoch, dict(wanted), []
        sent = self.sent
        send = {}
        for k, p in wanted.items():
            old = sent.get(k)
            if old is not p and old != p:
                send[k] = p
        forget = [k for k in self.sent if k not in wanted]
        return self.session_id, self.epoch, send, forget

    def handle_response(self, error: str | None, session_id: int) -> bool:
        """Apply the response's top-level error and session id; False on a session error."""
        pending, self._pending = self._pending or {}, None
        if error is not None:
            if error == "FETCH_SESSION_ID_NOT_FOUND":
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.epoch = INITIAL_EPOCH          # close this session, start a new one
            self.sent = {}
            return False
        if self._full:
            if session_id == INVALID_SESSION_ID:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                self.sent = {}
            else:
                self.session_id, self.epoch = session_id, 1
                self.sent = pending
        else:
            self.epoch = next_epoch(self.epoch)
            self.sent = pending
        return True

    def handle_error(self) -> None:
        """The request failed (timeout, disconnect): the next one is full and closes the session."""
        self._pending = None
        self.epoch = INITIAL_EPOCH
        self.sent = {}
