import pickle

from engine.clock import VirtualClock
from engine.events import Event, EventLog, event, event_from_dict, stream_digest


@event("test_thing_happened")
class ThingHappened(Event):
    where: str
    offsets: tuple = ()


def _log_with(*things):
    clock = VirtualClock()
    log = EventLog(clock)
    for i, t in enumerate(things):
        clock.advance(i)
        log.emit(t)
    return log


def test_envelope_carries_seq_time_and_kind():
    log = _log_with(ThingHappened("a"), ThingHappened("b", (1, 2)))
    d = log.envelopes[1].to_dict()
    assert d == {"seq": 2, "time_ms": 1, "kind": "test_thing_happened", "where": "b", "offsets": [1, 2]}


def test_event_round_trips_through_its_dict():
    ev = ThingHappened("x", (3, 4))
    assert event_from_dict(ev.to_dict()) == ev


def test_same_stream_same_digest_and_any_change_changes_it():
    a = _log_with(ThingHappened("a"), ThingHappened("b"))
    b = _log_with(ThingHappened("a"), ThingHappened("b"))
    c = _log_with(ThingHappened("a"), ThingHappened("c"))
    assert a.digest() == b.digest() != c.digest()
    assert stream_digest(a.envelopes) == a.digest()


def test_keep_bounds_memory_but_digest_covers_everything():
    clock = VirtualClock()
    full, bounded = EventLog(clock), EventLog(clock, keep=2)
    for i in range(5):
        full.emit(ThingHappened(str(i)))
        bounded.emit(ThingHappened(str(i)))
    assert [e.seq for e in bounded.envelopes] == [4, 5]
    assert bounded.digest() == full.digest()


def test_listeners_see_each_event_and_are_not_pickled():
    log = _log_with()
    seen = []
    log.subscribe(seen.append)
    log.emit(ThingHappened("z"))
    assert [e.event.where for e in seen] == ["z"]
    clone = pickle.loads(pickle.dumps(log))
    clone.emit(ThingHappened("only-clone"))
    assert len(seen) == 1 and clone.digest() != log.digest()


@event("test_one_field")
class OneField(Event):
    where: str


def test_digest_folds_one_field_events_and_lookup_rows():
    from engine.log.events import LogLookup

    def lookup(scan):
        return LogLookup(None, "t", 0, "offset", 5, [0], 0, "rule", [], [(0, 3, 1, 4, 40, "right")], scan, 5, 77, None)
    a = _log_with(OneField("a"), lookup([(0, 1, 1, 9, False), (77, 5, 5, 9, True)]))
    b = _log_with(OneField("a"), lookup([(0, 1, 1, 9, False), (77, 5, 5, 9, True)]))
    c = _log_with(OneField("a"), lookup([(0, 1, 1, 9, False), (77, 5, 5, 8, True)]))
    d = _log_with(OneField("b"), lookup([(0, 1, 1, 9, False), (77, 5, 5, 9, True)]))
    assert a.digest() == b.digest() and len({a.digest(), c.digest(), d.digest()}) == 3


def test_digest_does_not_depend_on_string_interning():
    import sys
    interned = sys.intern("topic-name-" + "x")
    fresh = "".join(["topic-name-", "x"])
    assert fresh is not interned
    assert _log_with(ThingHappened(interned)).digest() == _log_with(ThingHappened(fresh)).digest()


def _mixed(log, clock, n, fields: bool):
    """``n`` events, every other one through ``emit_fields`` when ``fields``; 1,200 crosses
    the digest's 512-event chunks."""
    for i in range(n):
        clock.advance(i % 3)
        if fields and i % 2:
            log.emit_fields(ThingHappened, str(i), (i, i + 1))
        else:
            log.emit(ThingHappened(str(i), (i, i + 1)))


def test_emit_fields_gives_the_same_stream_and_digest_as_emit():
    ca, cb = VirtualClock(), VirtualClock()
    a, b = EventLog(ca), EventLog(cb)
    _mixed(a, ca, 1200, fields=False)
    _mixed(b, cb, 1200, fields=True)
    assert b.digest() == a.digest()                      # folded before anyone read them
    assert b.envelopes == a.envelopes                     # made into the same envelopes on reading
    assert all(type(e.event) is ThingHappened for e in b.envelopes)
    assert stream_digest(b.envelopes) == b.digest()
    _mixed(b, cb, 3, fields=True)                         # rows after a read are made too
    assert [e.event.where for e in b.since(1200)] == ["0", "1", "2"]


def test_emit_fields_with_a_bounded_ring_listeners_and_pickling():
    clock, other = VirtualClock(), VirtualClock()
    full, bounded = EventLog(clock), EventLog(other, keep=3)
    _mixed(full, clock, 9, fields=True)
    _mixed(bounded, other, 9, fields=True)
    assert [e.seq for e in bounded.envelopes] == [7, 8, 9] and bounded.digest() == full.digest()
    seen = []
    full.subscribe(seen.append)
    full.emit_fields(ThingHappened, "heard", ())
    assert [e.event.where for e in seen] == ["heard"]    # a listener gets the envelope at once
    log = EventLog(clock)
    _mixed(log, clock, 5, fields=True)
    clone = pickle.loads(pickle.dumps(log))
    assert clone.envelopes == log.envelopes and clone.digest() == log.digest()


@event("test_thing_digested")
class ThingDigested(Event):
    """An event that folds a reduction of its fields into the digest (as LogLookup does)."""
    where: str
    steps: tuple = ()

    def digest_values(self) -> tuple:
        return (self.where, len(self.steps))


def _rows(log, clock, n, rows: bool):
    """``n`` rounds of two or three events at one time: through ``emit_rows`` when ``rows``."""
    for i in range(n):
        clock.advance(i % 2)
        events = [(ThingHappened, (str(i), (i,))), (ThingHappened, ("x", ()))]
        if i % 5 == 0:
            events.append((ThingDigested, ("d", (i, i))))
        if rows:
            log.emit_rows(events)
        else:
            for cls, values in events:
                log.emit(cls(*values))


def test_emit_rows_gives_the_same_stream_and_digest_as_emit_across_chunks():
    ca, cb = VirtualClock(), VirtualClock()
    a, b = EventLog(ca), EventLog(cb)
    _rows(a, ca, 700, rows=False)              # 1,540 events: three chunks, rows and envelopes mixed
    _rows(b, cb, 700, rows=True)
    assert b.seq == a.seq == 1540
    assert b.digest() == a.digest()
    assert b.envelopes == a.envelopes
    assert stream_digest(b.envelopes) == b.digest()
    ca2, cb2 = VirtualClock(), VirtualClock()
    bounded, heard = EventLog(ca2, keep=10), EventLog(cb2)
    seen = []
    heard.subscribe(seen.append)
    _rows(bounded, ca2, 700, rows=True)
    _rows(heard, cb2, 700, rows=True)
    assert bounded.digest() == heard.digest() == a.digest()
    assert bounded.envelopes == a.envelopes[-10:] and seen == a.envelopes


def test_a_pickle_with_flat_rows_loads_as_the_same_stream():
    """Rows were once kept flat, ``(seq, time_ms, kind, *values)``; such a pickle still loads."""
    clock = VirtualClock()
    log = EventLog(clock)
    _mixed(log, clock, 600, fields=True)
    expected_digest = log.digest()
    state = log.__getstate__()
    flat = lambda items: [(r[0], r[1], r[2], *r[3]) if type(r) is tuple else r for r in items]
    state["_ring"], state["_pending"] = flat(state["_ring"]), flat(state["_pending"])
    del state["_plain"]
    state["clock"] = other = VirtualClock(clock.now_ms())
    old = EventLog.__new__(EventLog)
    old.__setstate__(state)
    assert old.digest() == expected_digest
    _mixed(old, other, 600, fields=True)
    _mixed(log, clock, 600, fields=True)
    assert old.digest() == log.digest() and old.envelopes == log.envelopes


def test_since_and_between_bisect_the_ring_and_see_what_it_keeps():
    clock = VirtualClock()
    log = EventLog(clock, keep=5)
    for i in range(12):
        log.emit(ThingHappened(str(i)))
    assert [e.seq for e in log.envelopes] == [8, 9, 10, 11, 12]
    assert [e.seq for e in log.since(9)] == [10, 11, 12]
    assert [e.seq for e in log.between(2, 9)] == [8, 9]
    assert log.between(12, 20) == [] and log.since(0) == log.envelopes


def test_a_default_event_log_is_bounded_and_its_digest_covers_everything():
    from engine.events import DEFAULT_KEEP
    clock = VirtualClock()
    bounded, full = EventLog(clock), EventLog(clock, keep=None)
    for i in range(DEFAULT_KEEP + 700):
        bounded.emit_fields(OneField, str(i))
        full.emit_fields(OneField, str(i))
    assert len(bounded.envelopes) == DEFAULT_KEEP and bounded.envelopes[-1].seq == DEFAULT_KEEP + 700
    assert len(full.envelopes) == DEFAULT_KEEP + 700
    assert bounded.digest() == full.digest()


def test_a_listener_of_some_kinds_sees_only_those_and_counters_count_every_kind():
    clock = VirtualClock()
    log = EventLog(clock)
    seen, counts = [], {}
    log.subscribe(seen.append, kinds=("test_one_field",))
    log.count_into(counts)
    log.emit_fields(ThingHappened, "a", ())
    log.emit_fields(OneField, "b")
    log.emit(ThingHappened("c"))
    assert [e.event.where for e in seen] == ["b"]
    assert counts == {"test_thing_happened": 2, "test_one_field": 1}
    plain = EventLog(VirtualClock())
    plain.emit(ThingHappened("a", ()))
    plain.emit(OneField("b"))
    plain.emit(ThingHappened("c"))
    assert log.digest() == plain.digest()


def test_emit_row_select_and_retained_count_agree_with_the_envelopes():
    """One-row emit_row makes the stream emit makes; select builds only the kinds asked for
    and gives what filtering the envelopes gives; retained_count is their length."""
    ca, cb = VirtualClock(), VirtualClock()
    a, b = EventLog(ca, keep=300), EventLog(cb, keep=300)
    for i in range(700):
        for clock, log in ((ca, a), (cb, b)):
            clock.advance(i % 2)
        a.emit(ThingHappened(str(i), (i,)))
        b.emit_row(ThingHappened, (str(i), (i,)))
        if i % 7 == 0:
            a.emit(ThingDigested("d", (i,)))
            b.emit_row(ThingDigested, ("d", (i,)))
    assert b.digest() == a.digest() and b.seq == a.seq
    assert b.retained_count() == len(a.envelopes)
    rows_before = sum(type(item) is tuple for item in b._ring)
    picked = b.select("test_thing_happened")
    assert rows_before > 200 and sum(type(item) is tuple for item in b._ring) == rows_before   # built nothing in place
    assert picked == [e for e in a.envelopes if e.event.kind == "test_thing_happened"]
    assert b.select("test_thing_digested") == [e for e in a.envelopes if e.event.kind == "test_thing_digested"]
    assert b.envelopes == a.envelopes and b.retained_count() == len(a.envelopes)


# ---- packed chunks: a folded chunk of unread rows kept as the bytes its digest hashed -----------

import enum  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

from engine.events import _CHUNK  # noqa: E402


class Mode(enum.Enum):
    FAST = "fast"


@event("test_thing_moded")
class ThingModed(Event):
    """A field marshal cannot take (an enum) or a list: the chunk folds through its plain form."""
    mode: object


def _values(i: int):
    """Field values for event ``i``: mostly plain, sometimes a list, now and then an enum (whose
    chunk cannot be packed)."""
    if i % 1009 == 0:
        return ThingModed, (Mode.FAST,)
    if i % 97 == 0:
        return ThingModed, ([i, "x"],)
    return ThingHappened, (str(i), (i, -i) if i % 3 else ())


def test_unread_rows_are_kept_packed_and_read_back_as_the_same_stream():
    clock, ref_clock = VirtualClock(), VirtualClock()
    log, ref = EventLog(clock, keep=None), EventLog(ref_clock, keep=None)
    log.emit(ThingHappened("first"))                      # an envelope ahead of the rows
    ref.emit(ThingHappened("first"))
    for i in range(1, 5000):
        clock.advance(i % 2)
        ref_clock.advance(i % 2)
        cls, values = ThingHappened, (str(i), (i,))
        log.emit_row(cls, values)
        ref.emit(cls(*values))
    assert len(log._packs) >= 9 and len(log._ring) < _CHUNK     # 9 chunks packed, not 4,999 live rows
    assert all(type(data) is bytes for _, data in log._packs[1:])
    assert log.retained_count() == 5000 and log.digest() == ref.digest()
    assert log.select("test_thing_happened") == ref.envelopes and log._packs      # read, left packed
    assert log.since(4990) == ref.envelopes[4990:]
    assert log.envelopes == ref.envelopes and not log._packs
    assert stream_digest(log.envelopes) == ref.digest()


_OPS = st.lists(st.tuples(st.sampled_from(["emit", "row", "rows", "fields", "read", "between", "select",
                                           "count", "pickle", "digest"]),
                          st.integers(0, 700), st.integers(0, 3)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(ops=_OPS, keep=st.sampled_from([None, 5, 600, 1500, 100_000]))
def test_packed_chunks_keep_the_stream_its_digest_and_the_ring_bound(ops, keep):
    """Against a log fed only envelopes (which never packs): the same digest, the same retained
    events through every reader, across packing, trimming, reading and pickling."""
    clock, ref_clock = VirtualClock(), VirtualClock()
    log, ref = EventLog(clock, keep=keep), EventLog(ref_clock, keep=None)
    i = 0
    for op, n, step in ops:
        if op in ("emit", "row", "rows", "fields"):
            for _ in range(n):
                i += 1
                clock.advance(step)
                ref_clock.advance(step)
                cls, values = _values(i)
                ref.emit(cls(*values))
                if op == "emit":
                    log.emit(cls(*values))
                elif op == "row":
                    log.emit_row(cls, values)
                elif op == "rows":
                    log.emit_rows([(cls, values)])
                else:
                    log.emit_fields(cls, *values)
        expected = ref.envelopes if keep is None else ref.envelopes[-keep:]
        if op == "read":
            assert log.envelopes == expected
        elif op == "between":
            lo, hi = ref.seq - n, ref.seq - n // 2 + step
            assert log.between(lo, hi) == [e for e in expected if lo < e.seq <= hi]
        elif op == "select":
            assert log.select("test_thing_moded") == [e for e in expected if e.event.kind == "test_thing_moded"]
            assert log.select("test_thing_happened", "test_thing_moded") == expected
        elif op == "count":
            assert log.retained_count() == len(expected)
        elif op == "pickle":
            log = pickle.loads(pickle.dumps(log))
            clock = log.clock
        elif op == "digest":
            assert log.digest() == ref.digest()
        if keep is not None:
            assert log._packed + len(log._ring) <= keep + max(keep >> 2, 64) + _CHUNK
    expected = ref.envelopes if keep is None else ref.envelopes[-keep:]
    assert log.digest() == ref.digest() == stream_digest(ref.envelopes)
    assert log.retained_count() == len(expected) and log.envelopes == expected


def test_a_pickle_from_before_packing_loads_as_the_same_stream():
    """A pickle without packed chunks (state before they existed) still loads and packs on."""
    clock = VirtualClock()
    log = EventLog(clock)
    for i in range(300):
        log.emit_row(*_values(i + 1))
    state = pickle.loads(pickle.dumps(log.__getstate__()))
    del state["_packs"], state["_packed"]
    state["clock"] = other = VirtualClock(clock.now_ms())
    old = EventLog.__new__(EventLog)
    old.__setstate__(state)
    for i in range(300, 2000):
        old.emit_row(*_values(i + 1))
        log.emit_row(*_values(i + 1))
    assert old._packs and old.digest() == log.digest() and old.envelopes == log.envelopes
