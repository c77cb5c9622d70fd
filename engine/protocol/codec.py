"""The one codec generator: request, response and header codecs built from Kafka's JSON
message definitions (:mod:`engine.protocol.schema`), one pair of closures per message and version.

A message value is a plain ``dict`` keyed by snake_case field names; a struct is a dict, an
array a list, ``bytes``/``records`` are ``bytes``, a ``uuid`` is 16 bytes. Decoding fills
every field the JSON declares (fields absent from the version get their defaults), so a
handler never has to ask which version it is reading.

Byte layout (Kafka's protocol guide, KIP-482 for flexible versions):

* int8/16/32/64, uint16, float64, bool: big-endian fixed width.
* Non-flexible: string = int16 length (-1 null) + UTF-8; bytes/records = int32 length (-1
  null); array = int32 count (-1 null); nullable struct = int8 (-1 null, 1 present).
* Flexible: string/bytes/records/array use an unsigned varint of length + 1 (0 = null),
  and every struct (and the message) ends with a tagged-field section: unsigned varint
  count, then per field unsigned varint tag, unsigned varint size and the value. A tagged
  field is written only when it differs from its default, in tag order.

Decoding is defensive: a length or count larger than the bytes left is refused before
anything is allocated (as Kafka's ``Tried to allocate a collection of size N``), and every
failure is a :class:`DecodeError`.
"""
from __future__ import annotations

import functools
import struct
from typing import Any, Callable

from .schema import FieldSpec, MessageSpec, load_message

__all__ = ["DecodeError", "Codec", "codec", "request_header_version", "response_header_version",
           "encode_uvarint", "read_uvarint", "default_value", "RequestHeader", "ResponseHeader"]


class DecodeError(ValueError):
    """Bytes that do not decode as the message and version they claim to be."""


# ---- primitives ---------------------------------------------------------------------

_FIXED = {
    "int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_I16 = _FIXED["int16"]
_I32 = _FIXED["int32"]
_I8 = _FIXED["int8"]


def encode_uvarint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    if pos < len(buf) and buf[pos] < 0x80:      # one byte: every count and length under 128
        return buf[pos], pos + 1
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint longer than 5 bytes")


def _fixed(kind: str) -> tuple[Callable, Callable]:
    s = _FIXED[kind]
    size = s.size
    unpack, pack = s.unpack_from, s.pack

    def read(buf, pos):
        if pos + size > len(buf):
            raise DecodeError(f"truncated {kind}")
        return unpack(buf, pos)[0], pos + size

    def write(out, v):
        out += pack(v)
    return read, write


def _bool():
    def read(buf, pos):
        if pos >= len(buf):
            raise DecodeError("truncated bool")
        return buf[pos] != 0, pos + 1

    def write(out, v):
        out.append(1 if v else 0)
    return read, write


def _uuid():
    def read(buf, pos):
        if pos + 16 > len(buf):
            raise DecodeError("truncated uuid")
        return bytes(buf[pos:pos + 16]), pos + 16

    def write(out, v):
        if len(v) != 16:
            raise ValueError(f"uuid must be 16 bytes, got {len(v)}")
        out += v
    return read, write


def _length(compact: bool, wide: bool):
    """Readers/writers of a length prefix: compact uvarint (n+1) or int16/int32; -1 = null."""
    if compact:
        def read_len(buf, pos):
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        def write_len(out, n):
            encode_uvarint(out, n + 1)
    else:
        s = _I32 if wide else _I16

        def read_len(buf, pos):
            if pos + s.size > len(buf):
                raise DecodeError("truncated length")
            return s.unpack_from(buf, pos)[0], pos + s.size

        def write_len(out, n):
            out += s.pack(n)
    return read_len, write_len


def _blob(text: bool, compact: bool, nullable: bool, what: str):
    read_len, write_len = _length(compact, wide=not text)

    def read(buf, pos):
        n, pos = read_len(buf, pos)
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise DecodeError(f"{what}: length {n} for a non-nullable field")
        end = pos + n
        if end > len(buf):
            raise DecodeError(f"{what}: length {n} but only {len(buf) - pos} bytes left")
        raw = bytes(buf[pos:end])
        if text:
            try:
                return raw.decode("utf-8"), end
            except UnicodeDecodeError as exc:
                raise DecodeError(f"{what}: not UTF-8 ({exc.reason})") from None
        return raw, end

    def write(out, v):
        if v is None:
            if not nullable:
                raise ValueError(f"{what} is not nullable")
            write_len(out, -1)
            return
        if text:
            v = v.encode("utf-8")
        write_len(out, len(v))
        out += v
    return read, write


def _scalar(f: FieldSpec, element: str, version: int, compact: bool, nullable: bool):
    what = f.json_name
    if element in _FIXED:
        return _fixed(element)
    if element == "bool":
        return _bool()
    if element == "uuid":
        return _uuid()
    if element == "string":
        return _blob(True, compact, nullable, what)
    if element in ("bytes", "records"):
        return _blob(False, compact, nullable, what)
    raise AssertionError(f"unknown type {element!r} in {what}")


# ---- defaults -------------------------------------------------------------------------

def default_value(f: FieldSpec, version: int | None = None) -> Any:
    d = f.default
    null_ok = version is None or version in f.nullable
    if d == "null" and null_ok:
        return None
    if f.is_array:
        return []
    if f.is_struct:
        return {c.name: default_value(c, version) for c in f.fields}
    t = f.type
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(d, 0) if isinstance(d, str) and d else (int(d) if d is not None else 0)
    if t == "float64":
        return float(d) if d not in (None, "") else 0.0
    if t == "bool":
        return d is True or d == "true"
    if t == "string":
        return d if isinstance(d, str) and d != "null" else ""
    if t in ("bytes", "records"):
        return b""
    if t == "uuid":
        return bytes(16)
    raise AssertionError(f"no default for type {t!r}")


# ---- structs --------------------------------------------------------------------------

def _field_codec(f: FieldSpec, version: int, flexible: bool):
    compact = flexible if f.flexible_override is None else (version in f.flexible_override)
    nullable = version in f.nullable
    if f.is_array:
        if f.is_struct:
            elem_read, elem_write = _struct_codec(f.fields, version, flexible)
        else:
            elem_read, elem_write = _scalar(f, f.element, version, compact, False)
        return _array(f, elem_read, elem_write, compact, nullable)
    if f.is_struct:
        read, write = _struct_codec(f.fields, version, flexible)
        if not nullable:
            return read, write

        def read_opt(buf, pos):
            marker, pos = _fixed("int8")[0](buf, pos)
            return (None, pos) if marker < 0 else read(buf, pos)

        def write_opt(out, v):
            if v is None:
                out += _I8.pack(-1)
            else:
                out += _I8.pack(1)
                write(out, v)
        return read_opt, write_opt
    return _scalar(f, f.type, version, compact, nullable)


def _array(f: FieldSpec, elem_read, elem_write, compact: bool, nullable: bool):
    read_len, write_len = _length(compact, wide=True)
    what = f.json_name

    def read(buf, pos):
        n, pos = read_len(buf, pos)
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise DecodeError(f"{what}: count {n} for a non-nullable array")
        if n > len(buf) - pos:
            raise DecodeError(f"{what}: tried to allocate a collection of size {n}, but there are only "
                              f"{len(buf) - pos} bytes remaining")
        items = []
        append = items.append
        for _ in range(n):
            v, pos = elem_read(buf, pos)
            append(v)
        return items, pos

    def write(out, v):
        if v is None:
            if not nullable:
                raise ValueError(f"{what} is not nullable")
            write_len(out, -1)
            return
        write_len(out, len(v))
        for item in v:
            elem_write(out, item)
    return read, write


def _struct_codec(fields: tuple, version: int, flexible: bool):
    """(read, write) of a struct (or a whole message body) at ``version``."""
    plain = []       # (name, read, write) in order
    tagged = {}      # tag -> (name, read, write, default)
    absent = []      # (name, default) of fields not in this version
    for f in fields:
        if version not in f.versions:
            absent.append((f.name, f))
            continue
        read, write = _field_codec(f, version, flexible)
        if flexible and version in f.tagged:
            tagged[f.tag] = (f.name, read, write, default_value(f, version))
        else:
            plain.append((f.name, read, write))
    tag_order = sorted(tagged)
    # Defaults computed once: a value that is not a list or dict is shared, one that is is
    # copied per message (a handler may change what it decoded).
    # (Keys keep the order they always had: absent fields, then the plain ones, then tagged.)
    absent_defaults = [(name, default_value(f, version)) for name, f in absent]
    absent_shared = None if any(isinstance(d, (dict, list)) for _, d in absent_defaults) else dict(absent_defaults)
    tagged_defaults = [(name, d) for name, _, _, d in tagged.values()]
    tagged_shared = None if any(isinstance(d, (dict, list)) for _, d in tagged_defaults) else dict(tagged_defaults)

    def read(buf, pos):
        if absent_shared is not None:
            value = dict(absent_shared)
        else:
            value = {name: _copy(d) for name, d in absent_defaults}
        for name, rd, _ in plain:
            value[name], pos = rd(buf, pos)
        if flexible:
            if tagged_shared is not None:
                value.update(tagged_shared)
            else:
                for name, d in tagged_defaults:
                    value[name] = _copy(d)
            count, pos = read_uvarint(buf, pos)
            if count > len(buf) - pos:
                raise DecodeError(f"{count} tagged fields but only {len(buf) - pos} bytes left")
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise DecodeError(f"tagged field {tag}: size {size} but only {len(buf) - pos} bytes left")
                known = tagged.get(tag)
                if known is not None:
                    v, at = known[1](buf[:end], pos)
                    if at != end:
                        raise DecodeError(f"tagged field {tag} ({known[0]}) has {end - at} stray bytes")
                    value[known[0]] = v
                pos = end
        return value, pos

    def write(out, value):
        get = value.get
        for name, _, wr in plain:
            wr(out, get(name) if name in value else _missing(name, fields, version))
        if flexible:
            present = [(t, tagged[t]) for t in tag_order
                       if tagged[t][0] in value and value[tagged[t][0]] != tagged[t][3]]
            encode_uvarint(out, len(present))
            for tag, (name, _, wr, _) in present:
                body = bytearray()
                wr(body, value[name])
                encode_uvarint(out, tag)
                encode_uvarint(out, len(body))
                out += body
    return read, write


def _missing(name: str, fields: tuple, version: int) -> Any:
    for f in fields:
        if f.name == name:
            return default_value(f, version)
    raise AssertionError(name)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


# ---- messages -------------------------------------------------------------------------

class Codec:
    """Encoder and decoder of one message at one version: ``encode(value) -> bytes``,
    ``decode(data, pos=0) -> (value, pos)``."""

    def __init__(self, spec: MessageSpec, version: int, flexible: bool | None = None) -> None:
        self.spec = spec
        self.version = version
        self.flexible = (version in spec.flexible) if flexible is None else flexible
        self._read, self._write = _struct_codec(spec.fields, version, self.flexible)

    def encode(self, value: dict) -> bytes:
        out = bytearray()
        self._write(out, value)
        return bytes(out)

    def encode_into(self, out: bytearray, value: dict) -> None:
        self._write(out, value)

    def decode(self, data: Any, pos: int = 0) -> tuple[dict, int]:
        if not isinstance(data, memoryview):
            data = memoryview(data)
        try:
            return self._read(data, pos)
        except DecodeError:
            raise
        except (IndexError, struct.error, OverflowError, MemoryError) as exc:  # pragma: no cover - guarded above
            raise DecodeError(f"{self.spec.name} v{self.version}: {exc}") from None


@functools.lru_cache(maxsize=None)
def codec(name: str, version: int) -> Codec:
    """``codec("MetadataRequest", 12)``: cached; ValueError for a version the JSON lacks."""
    spec = load_message(name)
    if version not in spec.valid:
        raise ValueError(f"{name} has no version {version} (valid {spec.valid.low}-{spec.valid.high})")
    return Codec(spec, version)


def request_header_version(flexible: bool) -> int:
    """RequestHeader v2 for flexible request versions, else v1 (v0 is ControlledShutdown v0 only)."""
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """ResponseHeader v1 for flexible versions, v0 otherwise; ApiVersions always answers
    with v0 so a client that does not know the broker's versions can read it (KIP-511)."""
    return 1 if flexible and api_key != 18 else 0


class _Header:
    """A request or response header's codecs, read from Kafka's JSON on first use: the
    engine imports this module for its metadata records (engine/protocol/definitions) and
    must not need kafka-python's request definitions to do so (a Spark executor's packed
    environment, for one, carries only what the engine needs)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @functools.cached_property
    def codecs(self) -> dict[int, "Codec"]:
        spec = load_message(self.name)
        return {v: Codec(spec, v, flexible=v in spec.flexible) for v in range(spec.valid.low, spec.valid.high + 1)}

    def encode(self, value: dict, version: int) -> bytes:
        return self.codecs[version].encode(value)

    def decode(self, data: Any, version: int, pos: int = 0) -> tuple[dict, int]:
        return self.codecs[version].decode(data, pos)


RequestHeader = _Header("RequestHeader")
ResponseHeader = _Header("ResponseHeader")
