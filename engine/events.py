"""Typed engine events and the log they are emitted into.

Every step the engine takes is an :class:`Event`: a frozen dataclass with a ``kind``
string and plain JSON-able fields (ints, strings, bools, None, lists and dicts of
those). Modules declare their own events with :func:`event` (storage events live in
``engine/log/events.py``, cluster events in ``engine/cluster/events.py``); this
module holds the base class, the registry used to turn dicts back into events, and
:class:`EventLog`, which stamps each event with a sequence number and the virtual
time and keeps a running SHA-256 over the stream (its field values, serialised a chunk
at a time), so that two runs can be compared by one hash.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import marshal
import operator
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, NamedTuple, Sequence

__all__ = ["Event", "Envelope", "EventLog", "event", "event_from_dict", "canonical_json", "stream_digest", "EVENT_TYPES"]

EVENT_TYPES: dict[str, type["Event"]] = {}


@dataclass(frozen=True)
class Event:
    """Base of all engine events. Subclasses are declared with :func:`event`."""

    kind: ClassVar[str] = "event"
    _field_names: ClassVar[tuple[str, ...]] = ()
    _values: ClassVar[Callable[[Any], tuple]] = staticmethod(lambda ev: ())
    _digest: ClassVar[Callable[[Any], tuple] | None] = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        d = self.__dict__
        for name in self._field_names:
            out[name] = _plain(d[name])
        return out

    def values(self) -> tuple:
        return self._values(self)

    def digest_values(self) -> tuple:
        """What the stream digest folds for this event: its field values. An event with bulky
        derived fields may fold a deterministic reduction of them instead."""
        return self._values(self)


def event(kind: str) -> Callable[[type], type]:
    """Class decorator: make ``cls`` a frozen dataclass event registered under ``kind``."""

    def wrap(cls: type) -> type:
        if kind in EVENT_TYPES:
            raise TypeError(f"event kind {kind!r} declared twice")
        cls = dataclass(frozen=True)(cls)
        cls.kind = kind
        fields = dataclasses.fields(cls)
        cls._field_names = names = tuple(f.name for f in fields)
        if len(names) > 1:
            cls._values = staticmethod(operator.attrgetter(*names))
        elif names:
            getter = operator.attrgetter(names[0])
            cls._values = staticmethod(lambda ev: (getter(ev),))
        # What the digest folds: the field values (read straight off __dict__, which holds the
        # fields in declaration order), unless the class reduces them itself.
        cls._digest = None if cls.digest_values is Event.digest_values else staticmethod(cls.digest_values)
        if not hasattr(cls, "__post_init__"):
            cls.__init__ = _fast_init(cls, fields)
        EVENT_TYPES[kind] = cls
        return cls

    return wrap


def _fast_init(cls: type, fields: tuple) -> Callable:
    """An ``__init__`` that writes the fields straight into the instance's ``__dict__``. A frozen
    dataclass's own ``__init__`` calls ``object.__setattr__`` once per field, and events are made
    on every append; the result (a plain ``__dict__``, equality, hashing, pickling) is the same."""
    if any(f.default_factory is not dataclasses.MISSING for f in fields):
        return cls.__init__
    params, defaults = [], {}
    for f in fields:
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            defaults[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
    body = "".join(f"\n    d[{f.name!r}] = {f.name}" for f in fields)
    src = f"def __init__(self, {', '.join(params)}):\n    d = self.__dict__{body}\n"
    namespace = dict(defaults)
    exec(src, namespace)   # noqa: S102 - code built from the dataclass's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def event_from_dict(data: dict[str, Any]) -> Event:
    data = dict(data)
    cls = EVENT_TYPES[data.pop("kind")]
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in names})


_SCALARS = (int, str, float, type(None))


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return value.hex()
    return value


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Envelope(NamedTuple):
    """An event as it happened: its place in the stream and the virtual time."""

    seq: int
    time_ms: int
    event: Event

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "time_ms": self.time_ms, **self.event.to_dict()}


DEFAULT_KEEP = 100_000
_UNSET: Any = object()


class EventLog:
    """The sink every engine component emits into.

    ``keep`` bounds memory: only the last ``keep`` events are retained — by default
    :data:`DEFAULT_KEEP`, so a bare ``Log`` or ``Cluster`` that runs for millions of records
    does not hold every event (``keep=None`` keeps all) — while the running digest always
    covers the whole stream. The ring is trimmed when a digest chunk is folded (it may hold
    up to a quarter more than ``keep``, plus a chunk or two, between two trims; :attr:`envelopes` and
    :meth:`since` never show more than ``keep``). Listeners are called synchronously with each envelope; they are not part of a
    snapshot (see ``__getstate__``). A listener may name the ``kinds`` it wants: an event of
    another kind is not built for it. :meth:`count_into` keeps a count per kind without any
    event being built.

    Hot paths call :meth:`emit_fields` (or :meth:`emit_rows`) with an event class and its field
    values: unless a listener wants that kind, the event is kept as a plain row
    ``(seq, time_ms, kind, values)`` — exactly what the digest folds, so a chunk of rows is
    marshalled as it is — and becomes an :class:`Envelope` the first time anyone reads
    :attr:`envelopes` (formatted only when read). A row of plain values is two small tuples that
    the garbage collector stops tracking, where an event object is three tracked objects; the
    stream, its order and its digest are the same either way.

    Once a chunk of rows that nobody has read is folded, the ring keeps it as the bytes the
    digest hashed (``marshal`` of the rows, one object for 512 events: about 95 B an event
    instead of two live tuples, nothing for the garbage collector to visit, nothing to free one
    by one when the ring is trimmed); reading the ring turns them back into the same rows.
    """

    def __init__(self, clock: Any, keep: int | None = _UNSET) -> None:
        if not hasattr(clock, "_now_ms"):
            # The hot emit paths read the virtual clock's time straight off it (no call).
            raise TypeError(f"an EventLog needs the engine's VirtualClock, got {type(clock).__name__}")
        self.clock = clock
        self.keep = DEFAULT_KEEP if keep is _UNSET else keep
        self.seq = 0
        # The ring: envelopes, and rows not made into envelopes yet from index _first_row on.
        self._ring: list = []
        self._first_row: int | None = None
        # What the ring held before its packed chunks, older than everything in _ring:
        # [(count, marshal bytes of a chunk of rows, or a list of items)]; _packed: their count.
        self._packs: list = []
        self._packed = 0
        # Digest: envelopes are folded into a chained sha256 in chunks of _CHUNK events, at
        # fixed boundaries, so the value never depends on when digest() is asked. Emitting only
        # queues the envelope (or row); its fields are serialised when its chunk is folded.
        # _plain: every queued item is a row (the chunk needs no reshaping before marshal).
        self._digest = ""
        self._pending: list = []
        self._plain = True
        self._listeners: list[Callable[[Envelope], None]] = []
        # (listener, kinds or None) and the counters of count_into; _wanted: kind -> whether a
        # listener wants its events built (filled lazily; None = every kind is wanted).
        self._subs: list = []
        self._counters: list = []
        self._wanted: dict | None = {}

    def emit(self, ev: Event) -> Envelope:
        self.seq += 1
        env = _new_envelope(Envelope, (self.seq, self.clock.now_ms(), ev))
        self._keep(env)
        if self._counters:
            kind = ev.kind
            for counts in self._counters:
                counts[kind] = counts.get(kind, 0) + 1
        if self._subs:
            kind = ev.kind
            for listener, kinds in list(self._subs):
                if kinds is None or kind in kinds:
                    listener(env)
        return env

    def _wants(self, kind: str) -> bool:
        wanted = self._wanted
        if wanted is None:
            return True
        w = wanted.get(kind)
        if w is None:
            w = wanted[kind] = any(kind in kinds for _, kinds in self._subs)
        return w

    # Someone listens or counts (subscribe, count_into): emits take the longer way. Class-level
    # so older snapshots load (a snapshot keeps no listeners).
    _hooked = False

    def emit_fields(self, cls: type[Event], *values: Any) -> None:
        """Emit ``cls(*values)`` (every field, in declaration order) — the same event at the
        same place in the stream as :meth:`emit` would, without building it unless a listener
        wants its kind (see the class docstring)."""
        if self._hooked or cls._digest is not None:
            self._emit_fields_hooked(cls, values)
            return
        self.seq = seq = self.seq + 1
        row = (seq, self.clock._now_ms, cls.kind, values)
        ring = self._ring
        if self._first_row is None:
            self._first_row = len(ring)
        ring.append(row)
        pending = self._pending
        pending.append(row)
        if len(pending) >= _CHUNK:
            self._fold_full_chunks()

    def _emit_fields_hooked(self, cls: type[Event], values: tuple) -> None:
        """:meth:`emit_fields` while someone listens or counts, or for a class that reduces its
        fields for the digest."""
        if cls._digest is not None or (self._subs and self._wants(cls.kind)):
            self.emit(cls(*values))
            return
        self.seq = seq = self.seq + 1
        if self._counters:
            kind = cls.kind
            for counts in self._counters:
                counts[kind] = counts.get(kind, 0) + 1
        ring = self._ring
        if self._first_row is None:
            self._first_row = len(ring)
        row = (seq, self.clock._now_ms, cls.kind, values)
        pending = self._pending
        pending.append(row)
        ring.append(row)
        if len(pending) >= _CHUNK:
            self._fold_full_chunks()

    def emit_rows(self, events: Sequence[tuple[type[Event], tuple]]) -> None:
        """:meth:`emit_fields` of several ``(event class, field values)`` in order, at one
        virtual time (the append path's batch and index events, in one call)."""
        if self._hooked:
            for cls, values in events:
                self.emit_fields(cls, *values)
            return
        now = self.clock._now_ms
        seq = self.seq
        ring, pending = self._ring, self._pending
        if self._first_row is None:
            self._first_row = len(ring)
        for cls, values in events:
            seq += 1
            if cls._digest is None:
                row = (seq, now, cls.kind, values)
            else:
                row = _new_envelope(Envelope, (seq, now, cls(*values)))
                self._plain = False
            ring.append(row)
            pending.append(row)
        self.seq = seq
        if len(pending) >= _CHUNK:
            self._fold_full_chunks()

    def emit_row(self, cls: type[Event], values: tuple) -> None:
        """:meth:`emit_rows` of one ``(event class, field values)``: the append path's event."""
        if self._hooked or cls._digest is not None:
            self.emit_fields(cls, *values)
            return
        self.seq = seq = self.seq + 1
        if self._first_row is None:
            self._first_row = len(self._ring)
        row = (seq, self.clock._now_ms, cls.kind, values)
        self._ring.append(row)
        pending = self._pending
        pending.append(row)
        if len(pending) >= _CHUNK:
            self._fold_full_chunks()

    def _limit(self) -> int:
        keep = self.keep
        return keep + max(keep >> 2, 64)

    def _trim(self, exact: bool = True) -> None:
        """Drop the oldest events beyond ``keep``. Packed chunks go whole; unless ``exact``, a
        chunk that is only partly beyond ``keep`` stays packed while the excess is within the
        slack of ``_limit``."""
        ring, keep = self._ring, self.keep
        drop = self._packed + len(ring) - keep
        if drop <= 0:
            return
        packs = self._packs
        if packs:
            gone = 0
            while gone < len(packs) and packs[gone][0] <= drop:
                drop -= packs[gone][0]
                self._packed -= packs[gone][0]
                gone += 1
            del packs[:gone]
            # Unless exact, a chunk only partly beyond keep stays packed while what is over keep
            # is within the slack: up to a chunk more comes in before the next fold trims again.
            if drop <= 0 or (packs and not exact and drop <= self._limit() - keep):
                return
            if packs:
                self._unpack()
        del ring[:drop]
        if self._first_row is not None:
            self._first_row = max(0, self._first_row - drop)

    def _unpack(self) -> None:
        """Put the packed chunks back in the ring as rows (in front: they are older)."""
        rows: list = []
        for _, data in self._packs:
            rows += marshal.loads(data) if type(data) is bytes else data
        self._ring[:0] = rows
        self._first_row = 0
        self._packs, self._packed = [], 0

    def _keep(self, item: Any) -> None:
        """Queue ``item`` (an envelope or a row) for the digest and keep it in the ring."""
        pending = self._pending
        pending.append(item)
        if type(item) is not tuple:
            self._plain = False
        ring = self._ring
        ring.append(item)
        if len(pending) >= _CHUNK:
            self._fold_full_chunks()

    def _fold_full_chunks(self) -> None:
        """Fold every whole chunk of the queue into the digest (the rest stays queued), pack the
        folded rows the ring holds unread, and trim the ring."""
        pending, digest, ring, keep = self._pending, self._digest, self._ring, self.keep
        while len(pending) >= _CHUNK:
            chunk = pending[:_CHUNK]
            if not self._plain:
                digest = _fold(digest, chunk)
            else:
                data = _chunk_bytes(chunk)
                if data is None:                      # a field marshal cannot take
                    digest = _fold(digest, chunk, True)
                else:
                    digest = hashlib.sha256(digest.encode() + data).hexdigest()
                    # The ring holds this chunk's rows unread (nobody trimmed or read them):
                    # keep them as the bytes, behind what the ring holds before them.
                    at = len(ring) - len(pending)
                    first = self._first_row
                    if (first is not None and 0 <= at and first <= at and ring[at] is chunk[0]
                            and ring[at + _CHUNK - 1] is chunk[-1] and (keep is None or keep >= _CHUNK)):
                        if at:
                            self._packs.append((at, ring[:at]))
                        self._packs.append((_CHUNK, data))
                        self._packed += at + _CHUNK
                        del ring[:at + _CHUNK]
                        self._first_row = 0 if ring else None
            pending = pending[_CHUNK:]
            self._plain = all(type(item) is tuple for item in pending)
        self._digest, self._pending = digest, pending
        if keep is not None and self._packed + len(ring) > self._limit():
            self._trim(exact=False)

    @property
    def envelopes(self) -> list[Envelope]:
        """The retained events, oldest first (the list itself: read it, don't keep it across emits)."""
        if self._packs:
            self._unpack()
        if self.keep is not None:
            self._trim()
        first = self._first_row
        if first is not None:
            ring, types = self._ring, EVENT_TYPES
            for i in range(first, len(ring)):
                item = ring[i]
                if type(item) is tuple:
                    ring[i] = _new_envelope(Envelope, (item[0], item[1], types[item[2]](*item[3])))
            self._first_row = None
        return self._ring

    def select(self, *kinds: str) -> list[Envelope]:
        """The retained events of ``kinds``, oldest first: ``[e for e in envelopes if e.event.kind
        in kinds]`` without building the rows of other kinds into events (packed chunks are read
        where they are)."""
        if self.keep is not None:
            self._trim(exact=False)
        wanted = frozenset(kinds)
        types = EVENT_TYPES
        out = []
        items: Iterable = self._ring
        if self._packs:
            items = [item for _, data in self._packs
                     for item in (marshal.loads(data) if type(data) is bytes else data)]
            if self.keep is not None:
                del items[:max(0, len(items) + len(self._ring) - self.keep)]
            items += self._ring
        for item in items:
            if type(item) is tuple:
                if item[2] in wanted:
                    out.append(_new_envelope(Envelope, (item[0], item[1], types[item[2]](*item[3]))))
            elif item.event.kind in wanted:
                out.append(item)
        return out

    def retained_count(self) -> int:
        """``len(self.envelopes)`` without building the rows into events."""
        if self.keep is None:
            return self._packed + len(self._ring)
        self._trim(exact=False)
        return min(self.keep, self._packed + len(self._ring))

    @envelopes.setter
    def envelopes(self, envelopes: list[Envelope]) -> None:
        self._ring = envelopes
        self._first_row = None
        self._packs, self._packed = [], 0

    def subscribe(self, listener: Callable[[Envelope], None], kinds: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``listener(envelope)`` for every event from now on (or only those of ``kinds``).
        Returns a function that unsubscribes it."""
        entry = (listener, None if kinds is None else frozenset(kinds))
        self._listeners.append(listener)
        self._subs.append(entry)
        self._wanted = None if entry[1] is None or self._wanted is None else {}
        self._hooked = True

        def unsubscribe() -> None:
            if entry in self._subs:
                self._subs.remove(entry)
                self._listeners.remove(listener)
                self._wanted = None if any(k is None for _, k in self._subs) else {}
                self._hooked = bool(self._subs or self._counters)
        return unsubscribe

    def count_into(self, counts: dict) -> None:
        """Add one to ``counts[kind]`` for every event from now on (no event is built for it)."""
        self._counters.append(counts)
        self._hooked = True

    def digest(self) -> str:
        return _fold(self._digest, self._pending, self._plain) if self._pending else self._digest

    def since(self, seq: int) -> list[Envelope]:
        """The retained events after ``seq`` (a bisection on sequence numbers)."""
        return self.between(seq, self.seq)

    def between(self, lo: int, hi: int) -> list[Envelope]:
        """The retained events with ``lo < seq <= hi``, oldest first."""
        if self._packs:
            self._unpack()
        if self.keep is not None:
            self._trim()
        ring = self._ring
        if not ring:
            return []
        first = ring[0][0]
        if ring[-1][0] - first != len(ring) - 1:      # not consecutive (a ring set from outside): scan
            return [e for e in self.envelopes if lo < e.seq <= hi]
        a = max(0, lo + 1 - first)
        b = max(a, min(len(ring), hi + 1 - first))
        if a >= b:
            return []
        if self._first_row is not None and b > self._first_row:
            return self.envelopes[a:b]
        return ring[a:b]

    def of_kind(self, *kinds: str) -> list[Event]:
        return [e.event for e in self.envelopes if e.event.kind in kinds]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_listeners"] = []
        state["_subs"] = []
        state["_counters"] = []
        state["_wanted"] = {}
        state["_hooked"] = False
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "envelopes" in state:           # pickled before the ring held rows
            state["_ring"] = state.pop("envelopes")
            state.setdefault("_first_row", None)
        if "_plain" not in state:          # pickled when rows were flat: (seq, time_ms, kind, *values)
            for key in ("_ring", "_pending"):
                if key in state:
                    state[key] = [(r[0], r[1], r[2], r[3:]) if type(r) is tuple else r for r in state[key]]
            state["_plain"] = all(type(r) is tuple for r in state.get("_pending", ()))
        state.setdefault("_packs", [])
        state.setdefault("_packed", 0)
        state.setdefault("_subs", [])
        state.setdefault("_counters", [])
        state.setdefault("_wanted", {})
        self.__dict__.update(state)


_CHUNK = 512
_new_envelope = tuple.__new__     # Envelope(...) without its Python-level __new__


def _chunk_bytes(rows: list) -> bytes | None:
    """What :func:`_fold` hashes for a chunk of rows when marshal takes them all, else None."""
    try:
        return marshal.dumps(rows, 2)
    except ValueError:
        return None


def _fold(previous: str, envelopes: list, plain: bool = False) -> str:
    """sha256 of the previous digest and one chunk of envelopes (or :meth:`EventLog.emit_rows`
    rows ``(seq, time_ms, kind, values)``, which are already what is folded: ``plain`` says the
    chunk holds nothing else) in ``marshal`` format 2 (the
    C serialiser: ints stay binary, and format 2 has no back-references or interning flags,
    so equal values always give equal bytes). Fields marshal cannot take (an enum, a
    dataclass) make the chunk go through their plain JSON-able form instead."""
    rows = envelopes if plain else [
        item if type(item) is tuple else
        (item[0], item[1], item[2].kind,
         tuple(item[2].__dict__.values()) if item[2]._digest is None else item[2]._digest(item[2]))
        for item in envelopes]
    try:
        data = marshal.dumps(rows, 2)
    except ValueError:
        data = marshal.dumps([(q, t, k, _plain(v)) for q, t, k, v in rows], 2)
    return hashlib.sha256(previous.encode() + data).hexdigest()


def stream_digest(envelopes: Iterable[Envelope]) -> str:
    """The digest :class:`EventLog` would hold after emitting ``envelopes``."""
    digest, pending = "", []
    for env in envelopes:
        pending.append(env)
        if len(pending) >= _CHUNK:
            digest, pending = _fold(digest, pending), []
    return _fold(digest, pending) if pending else digest
