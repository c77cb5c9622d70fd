"""Kafka's JSON message definitions: the protocol's from the pinned kafka-python package,
the metadata log's from ``engine/protocol/definitions/``.

Kafka describes every request, response and header in a JSON file (``clients/src/main/
resources/common/message/*.json``): ``validVersions``, ``flexibleVersions`` and a tree of
fields, each with ``versions``, ``nullableVersions``, ``taggedVersions``/``tag``, ``default``
and, for structs, nested ``fields`` (or a ``commonStructs`` entry of the same name).
kafka-python 3.0.12 ships a copy (Apache-2.0) under ``kafka/protocol/schemas/resources``.

We read that copy at import time instead of committing our own: there is one copy of the
facts on the machine, pinned by version in requirements.txt, and nothing of ours to drift
from it. The files carry ``//`` comment lines, which are stripped before parsing.

kafka-python ships no metadata records (``metadata/src/main/resources/common/metadata/``) and
none of the raft control records (LeaderChangeMessage, SnapshotHeaderRecord, ...), so those
files are committed under ``definitions/``, reduced to Kafka's facts (its README names the
commit). :func:`load_message` looks in ours first, then in kafka-python's: the engine's
metadata records never need kafka-python.
"""
from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass

__all__ = ["Versions", "FieldSpec", "MessageSpec", "load_message", "snake_name", "RESOURCE_PACKAGE",
           "DEFINITIONS", "definition_names"]

RESOURCE_PACKAGE = "kafka.protocol.schemas.resources"
# Through importlib.resources, so the definitions are found inside a zip too (the lab ships the
# engine to Spark executors as one).
DEFINITIONS = importlib.resources.files(__package__).joinpath("definitions")
_COMMENT_LINES = re.compile(r"(?m)^\s*//.*\n?")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_name(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms`` (kafka-python's naming, so values compare)."""
    return _CAMEL.sub("_", name).lower()


@dataclass(frozen=True)
class Versions:
    """A version range from the JSON: "3+", "0-4", "5" or "none" (empty)."""
    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return cls(1, 0)
        text = str(text).strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), 1 << 15)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high


@dataclass(frozen=True)
class FieldSpec:
    """One field of a message or struct, as the JSON gives it."""
    name: str                     # snake_case
    json_name: str
    type: str                     # "int32", "string", "[]int32", "[]Topic", "Topic", "records", ...
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: object
    flexible_override: Versions | None   # "flexibleVersions" on a field: only the header's ClientId
    fields: tuple                 # nested FieldSpecs of a struct or struct array
    ignorable: bool = False       # "ignorable": a value for a version without the field is dropped, not refused
    struct_name: str = ""         # the struct's type name ("BrokerEndpoint" for "[]BrokerEndpoint")

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element[:1].isupper()


@dataclass(frozen=True)
class MessageSpec:
    """A request, response, header, metadata record or data (control record) definition."""
    name: str
    api_key: int | None
    type: str                     # "request" | "response" | "header" | "metadata" | "data"
    valid: Versions
    flexible: Versions
    fields: tuple


def _field(raw: dict, common: dict) -> FieldSpec:
    element = raw["type"][2:] if raw["type"].startswith("[]") else raw["type"]
    nested = raw.get("fields")
    if nested is None and element[:1].isupper():
        nested = common.get(element, [])
    return FieldSpec(
        name=snake_name(raw["name"]), json_name=raw["name"], type=raw["type"],
        versions=Versions.parse(raw.get("versions")), nullable=Versions.parse(raw.get("nullableVersions")),
        tagged=Versions.parse(raw.get("taggedVersions")), default=raw.get("default"),
        tag=int(raw["tag"]) if raw.get("tag") is not None else None,   # RegisterBrokerRecord writes "0"
        flexible_override=Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
        fields=tuple(_field(f, common) for f in (nested or [])), ignorable=bool(raw.get("ignorable", False)),
        struct_name=element if element[:1].isupper() else "")


@functools.lru_cache(maxsize=None)
def load_message(name: str) -> MessageSpec:
    """``load_message("MetadataRequest")``: the parsed definition (FileNotFoundError if absent)."""
    if "/" in name or "\\" in name or name.startswith("."):
        raise FileNotFoundError(f"no message definition {name!r}")
    ours = DEFINITIONS.joinpath(name + ".json")
    if ours.is_file():
        # Ours first: the metadata and control records need nothing but the engine (a Spark
        # executor's packed environment has no kafka-python); the two sets share no name.
        text = ours.read_text()
    else:
        text = importlib.resources.files(RESOURCE_PACKAGE).joinpath(name + ".json").read_text()
    data = json.loads(_COMMENT_LINES.sub("", text))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    return MessageSpec(name=data["name"], api_key=data.get("apiKey"), type=data["type"],
                       valid=Versions.parse(data["validVersions"]),
                       flexible=Versions.parse(data.get("flexibleVersions")),
                       fields=tuple(_field(f, common) for f in data["fields"]))


def definition_names() -> list[str]:
    """The names of the definitions committed under ``definitions/`` (metadata and control records)."""
    return sorted(p.name[:-len(".json")] for p in DEFINITIONS.iterdir() if p.name.endswith(".json"))
