"""KIP-227 fetch sessions (engine/cluster/fetch_session.py): the cache's eviction rules against
a model kept the way Kafka keeps them (ordered maps of last-used and evictable keys), the
request table of ``FetchManager.newContext``, and a fetcher and a leader exchanging full and
incremental fetches (with lost responses and evictions) without the fetcher ever missing a
change."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from engine.cluster.fetch_session import (FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, FetchSessionCache,
                                          FetchSessionHandler, PartitionParams, new_context, next_epoch)


# ---- the cache against a model of Kafka's ordered maps ------------------------------------

class ModelCache:
    """Kafka's FetchSessionCache as its source describes it: a lastUsed map ordered by
    (lastUsedMs, id) and two evictable maps ordered by (privileged, size, id), updated at touch."""

    def __init__(self, slots: int, eviction_ms: int) -> None:
        self.slots, self.eviction_ms = slots, eviction_ms
        self.sessions: dict[int, dict] = {}
        self.last_used: dict[tuple, int] = {}
        self.by_all: dict[tuple, int] = {}
        self.by_privileged: dict[tuple, int] = {}

    def create(self, sid: int, now: int, privileged: bool, size: int) -> bool:
        if len(self.sessions) >= self.slots and not self.evict(privileged, (privileged, size, 0), now):
            return False
        self.sessions[sid] = {"privileged": privileged, "size": size, "created": now, "used": now, "cached": -1}
        self.touch(sid, now)
        return True

    def evict(self, privileged: bool, key: tuple, now: int) -> bool:
        if not self.last_used:
            return False
        first = min(self.last_used)
        if now - first[0] > self.eviction_ms:
            self.remove(self.last_used[first])
            return True
        table = self.by_privileged if privileged else self.by_all
        if not table:
            return False
        victim = min(table)
        if key < victim:
            return False
        self.remove(table[victim])
        return True

    def touch(self, sid: int, now: int) -> None:
        s = self.sessions[sid]
        self.last_used.pop((s["used"], sid), None)
        s["used"] = now
        self.last_used[(now, sid)] = sid
        if s["cached"] != -1:
            old = (s["privileged"], s["cached"], sid)
            self.by_all.pop(old, None)
            self.by_privileged.pop(old, None)
        s["cached"] = s["size"]
        key = (s["privileged"], s["size"], sid)
        if not s["privileged"] or now - s["created"] > self.eviction_ms:
            self.by_privileged[key] = sid
        if now - s["created"] > self.eviction_ms:
            self.by_all[key] = sid

    def remove(self, sid: int) -> None:
        s = self.sessions.pop(sid)
        self.last_used.pop((s["used"], sid), None)
        key = (s["privileged"], s["cached"], sid)
        self.by_all.pop(key, None)
        self.by_privileged.pop(key, None)


_ops = st.lists(st.one_of(
    st.tuples(st.just("create"), st.booleans(), st.integers(0, 6)),
    st.tuples(st.just("touch"), st.integers(0, 50), st.integers(0, 6)),
    st.tuples(st.just("advance"), st.integers(0, 200)),
    st.tuples(st.just("remove"), st.integers(0, 50)),
), max_size=80)


@settings(max_examples=300, deadline=None)
@given(slots=st.integers(0, 5), eviction_ms=st.integers(0, 300), ops=_ops)
def test_the_cache_creates_evicts_and_refuses_exactly_as_kafkas_ordered_maps_do(slots, eviction_ms, ops):
    cache = FetchSessionCache(slots, eviction_ms, random.Random(7))
    model = ModelCache(slots, eviction_ms)
    now = 0
    for op in ops:
        if op[0] == "create":
            _, privileged, size = op
            sid = cache.maybe_create_session(now, privileged, size,
                                             lambda: {i: None for i in range(size)})
            if sid == INVALID_SESSION_ID:
                assert not model.create(-1, now, privileged, size)
            else:
                assert sid > 0
                assert model.create(sid, now, privileged, size)
        elif op[0] == "touch":
            ids = sorted(cache.sessions)
            if ids:
                sid = ids[op[1] % len(ids)]
                cache.sessions[sid].partitions = {i: None for i in range(op[2])}
                model.sessions[sid]["size"] = op[2]
                cache.touch(cache.sessions[sid], now)
                model.touch(sid, now)
        elif op[0] == "advance":
            now += op[1]
        else:
            ids = sorted(cache.sessions)
            if ids:
                sid = ids[op[1] % len(ids)]
                cache.remove(sid)
                model.remove(sid)
        assert sorted(cache.sessions) == sorted(model.sessions)
        assert cache.size <= slots
        assert cache.num_partitions == sum(s.cached_size for s in cache.sessions.values())


def _parts(n: int):
    return lambda: {("t", i): None for i in range(n)}


def test_a_follower_session_takes_a_consumers_slot_but_not_the_reverse_until_it_is_old():
    cache = FetchSessionCache(1, 1000, random.Random(1))
    consumer = cache.maybe_create_session(0, False, 5, _parts(5))
    assert consumer != INVALID_SESSION_ID
    follower = cache.maybe_create_session(10, True, 1, _parts(1))      # privileged beats unprivileged
    assert follower != INVALID_SESSION_ID and cache.get(consumer) is None
    assert cache.maybe_create_session(20, True, 50, _parts(50)) == INVALID_SESSION_ID   # a young follower stays
    cache.touch(cache.get(follower), 1500)       # old now, and decided so at this touch
    # Privileged sorts above unprivileged: no consumer session, however big, evicts a follower's.
    assert cache.maybe_create_session(1600, False, 50, _parts(50)) == INVALID_SESSION_ID
    assert cache.maybe_create_session(1600, True, 1, _parts(1)) == INVALID_SESSION_ID  # equal value: no
    assert cache.maybe_create_session(1600, True, 2, _parts(2)) != INVALID_SESSION_ID  # more partitions: yes
    assert cache.get(follower) is None and cache.evictions == 2


def test_a_stale_session_goes_first_whatever_its_value():
    cache = FetchSessionCache(1, 100, random.Random(1))
    big = cache.maybe_create_session(0, True, 1000, _parts(1000))
    assert cache.maybe_create_session(100, False, 0, _parts(0)) == INVALID_SESSION_ID    # not stale: 100 - 0 = 100
    small = cache.maybe_create_session(101, False, 0, _parts(0))
    assert small != INVALID_SESSION_ID and cache.get(big) is None


# ---- the request table ---------------------------------------------------------------------

def _params(offset: int) -> PartitionParams:
    return PartitionParams(offset, 1024)


def test_the_request_table():
    cache = FetchSessionCache(10, 1000, random.Random(3))
    data = {("t", 0): _params(0), ("t", 1): _params(5)}
    assert new_context(cache, 0, 0, FINAL_EPOCH, data, (), False).kind == "sessionless"
    full = new_context(cache, 0, 0, INITIAL_EPOCH, data, (), False)
    assert full.kind == "full"
    error, sid, keys = full.respond({k: (0, 10, 0, False, -1) for k in data})
    assert error is None and sid != INVALID_SESSION_ID and keys == list(data)
    assert cache.get(sid).epoch == 1
    # A wrong epoch, an unknown id, and an epoch > 0 without a session are errors and change nothing.
    assert new_context(cache, 1, sid, 2, {}, (), False).error == "INVALID_FETCH_SESSION_EPOCH"
    assert new_context(cache, 1, sid + 1, 1, {}, (), False).error == "FETCH_SESSION_ID_NOT_FOUND"
    assert new_context(cache, 1, 0, 1, {}, (), False).error == "FETCH_SESSION_ID_NOT_FOUND"
    inc = new_context(cache, 1, sid, 1, {}, (), False)
    assert inc.kind == "incremental" and cache.get(sid).epoch == 2
    assert [k for k, _ in inc.partitions()] == list(data)        # the whole session is read
    # Only the partition whose HW moved is answered; it moves to the end of the session's order.
    assert inc.respond({("t", 0): (0, 10, 0, False, -1), ("t", 1): (0, 11, 0, False, -1)}) == (None, sid, [("t", 1)])
    # The same request again (a duplicate) finds the epoch moved on.
    assert new_context(cache, 2, sid, 1, {}, (), False).error == "INVALID_FETCH_SESSION_EPOCH"
    # Forgetting every partition closes the session.
    last = new_context(cache, 2, sid, 2, {}, [("t", 0), ("t", 1)], False)
    assert last.kind == "sessionless" and cache.get(sid) is None
    # A full request naming a session closes it; with FINAL_EPOCH it opens none.
    sid2 = new_context(cache, 3, 0, 0, data, (), False).respond({k: (0, 0, 0, False, -1) for k in data})[1]
    assert new_context(cache, 4, sid2, FINAL_EPOCH, data, (), False).kind == "sessionless"
    assert cache.get(sid2) is None and cache.size == 0


def test_next_epoch_wraps_past_zero_and_final_stays_final():
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


# ---- a fetcher and a leader: incremental fetches lose nothing ------------------------------

_steps = st.lists(st.tuples(
    st.sets(st.integers(0, 5), max_size=6),            # the partitions the fetcher wants
    st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["append", "hw", "start", "error", "clear"])),
             max_size=4),                              # what happens on the leader
    st.sampled_from(["ok", "ok", "ok", "lost", "evict"]),
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(steps=_steps, slots=st.integers(0, 2))
def test_a_fetcher_on_incremental_fetches_sees_every_change_a_full_fetch_would(steps, slots):
    cache = FetchSessionCache(slots, 10_000, random.Random(5))
    handler = FetchSessionHandler()
    leo = {p: 0 for p in range(6)}
    hw = {p: 0 for p in range(6)}
    start = {p: 0 for p in range(6)}
    error = {p: False for p in range(6)}
    pos: dict[int, int] = {}          # the fetcher's fetch offset per partition
    known: dict[int, tuple] = {}      # what the fetcher last heard: (hw, log start, error)
    now = 0
    for wanted, changes, fate in steps:
        now += 10
        for p, what in changes:
            if what == "append":
                leo[p] += 3
            elif what == "hw":
                hw[p] = leo[p]
            elif what == "start":
                start[p] = min(start[p] + 1, hw[p])
            else:
                error[p] = what == "error"
        for p in wanted:
            pos.setdefault(p, 0)
        want = {p: PartitionParams(pos[p], 100) for p in sorted(wanted)}
        sid, epoch, send, forget = handler.build(want)
        if handler.epoch != INITIAL_EPOCH:
            assert set(send) <= set(want) and set(forget).isdisjoint(want)
        ctx = new_context(cache, now, sid, epoch, send, forget, True)
        answers = {}
        for p, params in ctx.partitions():
            records = max(0, leo[p] - params.fetch_offset) if not error[p] else 0
            answers[p] = (records, -1 if error[p] else hw[p], -1 if error[p] else start[p], error[p], -1)
        err, rsid, keys = ctx.respond(answers)
        if fate == "lost":
            handler.handle_error()
            continue
        if not handler.handle_response(err, rsid):
            continue
        for p in keys:
            size, h, s, e, _ = answers[p]
            known[p] = (h, s, e)
            pos[p] += size
        if fate == "evict" and rsid in cache.sessions:
            cache.remove(rsid)
        # After a successful answer, the fetcher knows every wanted partition's current state
        # and has every record: exactly what a full fetch would have told it.
        for p in want:
            truth = (-1, -1, True) if error[p] else (hw[p], start[p], False)
            if p in known:
                assert known[p] == truth, (p, known[p], truth)
            else:
                assert truth == (0, 0, False)    # never answered: nothing was ever there to say
            assert pos[p] == want[p].fetch_offset + (answers[p][0] if p in keys else 0)
            if not error[p]:
                assert pos[p] == leo[p]
