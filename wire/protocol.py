"""Frames, request headers and response bytes: everything between a socket and a handler.

A Kafka frame is ``int32 size`` followed by ``size`` bytes: the request header, then the
body. The header's first three fields (api key, api version, correlation id) and its
client id (always a classic int16-length string, even in header v2) are read first; the
API and version then say whether the header carries a tagged-field section (v2, for
flexible versions) and how the body decodes.

:func:`parse_request` never raises anything but :class:`ProtocolError` (close the
connection) or :class:`Unsupported` (answer with ``UNSUPPORTED_VERSION`` where a reply
can be encoded at all); its work is bounded by the frame's length, which the reader caps
before allocating (:data:`MAX_FRAME_BYTES`, Kafka's ``socket.request.max.bytes``).
"""
from __future__ import annotations

import base64
import functools
import struct
from dataclasses import dataclass

import kafka.errors

from .apis import SUPPORTED, decodable
from .codec import (Codec, DecodeError, RequestHeader, ResponseHeader, codec, request_header_version,
                    response_header_version)
from .schema import load_message

__all__ = ["MAX_FRAME_BYTES", "Request", "ProtocolError", "Unsupported", "parse_request", "encode_response",
           "error_code", "error_name", "uuid_bytes", "frame_size", "api_versions_fallback", "unsupported_response"]

# socket.request.max.bytes: Kafka's default is 100 MiB; a learner's listener needs far less.
MAX_FRAME_BYTES = 16 * 1024 * 1024
MIN_FRAME_BYTES = 8          # api key, version, correlation id, client id length
API_VERSIONS = 18
UNSUPPORTED_VERSION = 35

_CODES = {cls.message: errno for errno, cls in kafka.errors.kafka_errors.items()}
_CODES.update({"NONE": 0, "NOT_LEADER_OR_FOLLOWER": 6, "UNKNOWN_TOPIC_OR_PARTITION": 3,
               "FENCED_LEADER_EPOCH": 74, "UNKNOWN_LEADER_EPOCH": 75, "INVALID_TOPIC_EXCEPTION": 17,
               "RECORD_LIST_TOO_LARGE": 18, "INVALID_RECORD": 87, "OUT_OF_ORDER_SEQUENCE_NUMBER": 45,
               "DUPLICATE_SEQUENCE_NUMBER": 46, "INVALID_PRODUCER_EPOCH": 47, "UNKNOWN_PRODUCER_ID": 59,
               "PRODUCER_FENCED": 90, "INVALID_TXN_STATE": 48, "KAFKA_STORAGE_ERROR": 56,
               "INVALID_REPLICA_ASSIGNMENT": 39, "TOPIC_ALREADY_EXISTS": 36})


def error_code(name: str | None) -> int:
    """Kafka's error code for an error name (engine errors carry Kafka's names)."""
    if not name:
        return 0
    return _CODES.get(name, -1)   # -1 UNKNOWN_SERVER_ERROR for a name Kafka does not have


_NAMES = {code: name for name, code in _CODES.items() if isinstance(name, str)}
_NAMES.update({0: "NONE", 6: "NOT_LEADER_OR_FOLLOWER"})


def uuid_bytes(text: str) -> bytes:
    """An engine topic id (URL-safe base64, as Kafka prints a Uuid) as the protocol's 16 bytes."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def error_name(code: int) -> str:
    """Kafka's name for an error code (the inverse of :func:`error_code`)."""
    return _NAMES.get(code, f"ERROR_{code}")


class ProtocolError(Exception):
    """The bytes are not a request we can read: close this connection (only)."""


class Unsupported(Exception):
    """A well-formed header for an API or version we do not serve."""

    def __init__(self, api_key: int, version: int, correlation_id: int, message: str) -> None:
        super().__init__(message)
        self.api_key, self.version, self.correlation_id = api_key, version, correlation_id


@dataclass(frozen=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict

    @property
    def api(self) -> str:
        return SUPPORTED[self.api_key][0]


def frame_size(head: bytes, cap: int = MAX_FRAME_BYTES) -> int:
    """The size in a frame's 4-byte prefix, refused (ProtocolError) outside [8, cap]."""
    size = int.from_bytes(head, "big", signed=True)
    if size < MIN_FRAME_BYTES or size > cap:
        raise ProtocolError(f"frame size {size} outside [{MIN_FRAME_BYTES}, {cap}]")
    return size


_KEY_VERSION = struct.Struct(">hh")


@functools.lru_cache(maxsize=None)
def _request_codecs(key: int, version: int) -> tuple[Codec, Codec] | None:
    """(header codec, body codec) of a request we decode, or None: looked up once per API
    and version (every request paid for the schema lookups, and for decoding a flexible
    version's header twice)."""
    if not decodable(key, version):
        return None
    body = codec(SUPPORTED[key][0] + "Request", version)
    return RequestHeader.codecs[request_header_version(body.flexible)], body


@functools.lru_cache(maxsize=None)
def _response_codecs(key: int, version: int) -> tuple[Codec, Codec]:
    body = codec(SUPPORTED[key][0] + "Response", version)
    return ResponseHeader.codecs[response_header_version(key, body.flexible)], body


def parse_request(frame: bytes) -> Request:
    """Header and body of one frame (without its size prefix)."""
    codecs = _request_codecs(*_KEY_VERSION.unpack_from(frame)) if len(frame) >= 4 else None
    if codecs is None:
        # Not one we decode: its header as every version has it (v1), for the answer's correlation id.
        try:
            header, pos = RequestHeader.decode(frame, 1)
        except DecodeError as exc:
            raise ProtocolError(f"bad request header: {exc}") from None
        key, version, corr = header["request_api_key"], header["request_api_version"], header["correlation_id"]
        raise Unsupported(key, version, corr, f"api key {key} version {version} is not served here")
    head, body_codec = codecs
    try:
        header, pos = head.decode(frame)
    except DecodeError as exc:
        raise ProtocolError(f"bad request header: {exc}") from None
    key, version = header["request_api_key"], header["request_api_version"]
    try:
        body, end = body_codec.decode(frame, pos)
    except DecodeError as exc:
        raise ProtocolError(f"api key {key} v{version}: {exc}") from None
    if end != len(frame):
        raise ProtocolError(f"api key {key} v{version}: {len(frame) - end} bytes after the body")
    return Request(key, version, header["correlation_id"], header["client_id"], body)


def encode_response(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    """A whole response frame: size, response header, body."""
    head, c = _response_codecs(api_key, version)
    out = bytearray(4)
    head.encode_into(out, {"correlation_id": correlation_id})
    c.encode_into(out, body)
    out[0:4] = (len(out) - 4).to_bytes(4, "big")
    return bytes(out)


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: an ApiVersions request at a version we do not know gets a v0 response with
    UNSUPPORTED_VERSION and our ranges, so the client can retry at one we do."""
    from .apis import advertised
    body = {"error_code": UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in advertised()]}
    return encode_response(API_VERSIONS, 0, correlation_id, body)


def unsupported_response(exc: Unsupported) -> bytes | None:
    """An UNSUPPORTED_VERSION reply where one can be encoded: ApiVersions at any version
    (KIP-511), or a served API at a version Kafka's definitions have but we do not
    advertise (top-level error code where the response has one). None: no response format
    the client could read exists (an unknown API key, Produce v0-2), and Kafka closes the
    connection, as we do."""
    if exc.api_key == API_VERSIONS:
        return api_versions_fallback(exc.correlation_id)
    entry = SUPPORTED.get(exc.api_key)
    if entry is None or exc.version < 0:
        return None
    spec = load_message(entry[0] + "Response")
    if exc.version not in spec.valid:
        return None
    body: dict = {}
    if any(f.name == "error_code" for f in spec.fields):
        body["error_code"] = UNSUPPORTED_VERSION
    c = codec(entry[0] + "Response", exc.version)
    out = bytearray(4)
    out += ResponseHeader.encode({"correlation_id": exc.correlation_id},
                                 response_header_version(exc.api_key, c.flexible))
    c.encode_into(out, body)
    out[0:4] = (len(out) - 4).to_bytes(4, "big")
    return bytes(out)
