"""One generated class per message: a frozen dataclass whose fields are the definition's, in
snake_case, with the JSON's defaults; nested structs get classes of their own
(``RegisterBrokerRecord.BrokerEndpoint``).

The codec (:mod:`.codec`) works on plain dicts; a class turns itself into that dict for a version
(:meth:`Message.to_value`) and back (:meth:`Message.from_value`). In a class:

- an array is a tuple (a list given to the constructor is made a tuple; a dict given for a
  struct is made the struct's class), a nullable field may be ``None``;
- a ``uuid`` is Kafka's text form of it (``Uuid.toString``: URL-safe base64 without padding,
  22 characters), as the engine keeps topic ids and as ``kafka-dump-log.sh`` prints them;
- ``bytes`` are ``bytes``.

Writing a message at a version that lacks one of its fields refuses a value other than the
field's default, unless the field is ``ignorable`` (Kafka's generated ``write`` throws
UnsupportedVersionException the same way).

:meth:`Message.to_json` gives what Kafka's generated JSON converters write (the dump tool prints
it): camelCase names, fields of the version only, a uuid as text, bytes as base64.
"""
from __future__ import annotations

import base64
import dataclasses
import functools
from typing import Any, Callable

from .codec import default_value
from .schema import FieldSpec, MessageSpec, load_message

__all__ = ["Message", "message_class", "uuid_text", "uuid_bytes", "ZERO_UUID", "camel_name"]

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_text(raw: bytes) -> str:
    """16 bytes -> Kafka's ``Uuid.toString()``."""
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode("ascii")


def uuid_bytes(text: str) -> bytes:
    """Kafka's ``Uuid.toString()`` -> 16 bytes (ValueError if it is not one)."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"not a Kafka uuid (22 characters of URL-safe base64): {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a Kafka uuid: {text!r} ({exc})") from None
    if len(raw) != 16 or uuid_text(raw) != text:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return raw


def camel_name(json_name: str) -> str:
    """``BrokerId`` -> ``brokerId``, as Kafka's JSON converters name fields."""
    return json_name[:1].lower() + json_name[1:]


class Message:
    """Base of the generated classes. Class attributes: ``SPEC`` (the parsed definition, or a
    struct's field), ``FIELDS`` (its FieldSpecs)."""

    SPEC: Any = None
    FIELDS: tuple = ()
    _normalize: tuple = ()

    def __post_init__(self) -> None:
        for name, fix in self._normalize:
            value = getattr(self, name)
            fixed = fix(value)
            if fixed is not value:
                object.__setattr__(self, name, fixed)

    def to_value(self, version: int) -> dict:
        """The codec's dict for ``version`` (ValueError for a value the version cannot carry)."""
        return _to_value(self, self.FIELDS, version)

    @classmethod
    def from_value(cls, value: dict, version: int, extra: dict | None = None) -> "Message":
        """The instance of a codec dict read at ``version``; ``extra`` sets fields of the class
        that are not the definition's (``{"version": v}`` for a framed record)."""
        return _from_value(cls, cls.FIELDS, value, version, extra)

    def to_json(self, version: int) -> dict:
        """What Kafka's generated JSON converter writes for this message at ``version``."""
        return _to_json(self, self.FIELDS, version)


# ---- conversion between a class and the codec's dict ----------------------------------------

def _class_default(f: FieldSpec, owner_name: str) -> Callable[[], Any]:
    """A factory of the field's default in the class (tuples for arrays, text for uuids)."""
    if f.is_array:
        if f.default == "null":
            return lambda: None
        return tuple
    if f.is_struct:
        if f.default == "null":
            return lambda: None
        struct_cls = _struct_class(owner_name, f)
        return struct_cls
    if f.type == "uuid":
        return lambda: ZERO_UUID
    d = default_value(f, None)
    return lambda: d


def _scalar_to_value(f: FieldSpec, element: str, v: Any) -> Any:
    if element == "uuid":
        return uuid_bytes(v)
    return v


def _to_value(obj: Any, fields: tuple, version: int) -> dict:
    out = {}
    for f in fields:
        v = getattr(obj, f.name)
        if version not in f.versions:
            if not f.ignorable and not _is_default(f, v):
                raise ValueError(f"{type(obj).__name__}.{f.name} = {v!r} cannot be written at version {version} "
                                 f"(the field has versions {f.versions.low}+)")
            continue
        if v is None:
            if version not in f.nullable:
                raise ValueError(f"{type(obj).__name__}.{f.name} is not nullable at version {version}")
            out[f.name] = None
        elif f.is_array:
            if f.is_struct:
                out[f.name] = [_to_value(item, f.fields, version) for item in v]
            else:
                out[f.name] = [_scalar_to_value(f, f.element, item) for item in v]
        elif f.is_struct:
            out[f.name] = _to_value(v, f.fields, version)
        else:
            out[f.name] = _scalar_to_value(f, f.type, v)
    return out


def _is_default(f: FieldSpec, v: Any) -> bool:
    if f.is_array:
        return v == (None if f.default == "null" else ())
    if f.is_struct:
        if v is None:
            return f.default == "null"
        return all(_is_default(c, getattr(v, c.name)) for c in f.fields)
    if f.type == "uuid":
        return v == ZERO_UUID
    return v == default_value(f, None)


def _from_value(cls: type, fields: tuple, value: dict, version: int, extra: dict | None = None) -> Any:
    kwargs = dict(extra) if extra else {}
    for f in fields:
        if version not in f.versions:
            continue                       # the class default
        v = value[f.name]
        if v is None:
            kwargs[f.name] = None
        elif f.is_array:
            if f.is_struct:
                sub = _struct_class(cls.__qualname__.split(".")[0], f)
                kwargs[f.name] = tuple(_from_value(sub, f.fields, item, version) for item in v)
            elif f.element == "uuid":
                kwargs[f.name] = tuple(uuid_text(item) for item in v)
            else:
                kwargs[f.name] = tuple(v)
        elif f.is_struct:
            sub = _struct_class(cls.__qualname__.split(".")[0], f)
            kwargs[f.name] = _from_value(sub, f.fields, v, version)
        elif f.type == "uuid":
            kwargs[f.name] = uuid_text(v)
        else:
            kwargs[f.name] = v
    return cls(**kwargs)


def _json_scalar(element: str, v: Any) -> Any:
    if element in ("bytes", "records"):
        return base64.b64encode(v).decode("ascii")
    return v


def _to_json(obj: Any, fields: tuple, version: int) -> dict:
    out = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = getattr(obj, f.name)
        key = camel_name(f.json_name)
        if v is None:
            out[key] = None
        elif f.is_array:
            if f.is_struct:
                out[key] = [_to_json(item, f.fields, version) for item in v]
            else:
                out[key] = [_json_scalar(f.element, item) for item in v]
        elif f.is_struct:
            out[key] = _to_json(v, f.fields, version)
        else:
            out[key] = _json_scalar(f.type, v)
    return out


# ---- class generation ---------------------------------------------------------------------------

def _normalizer(owner_name: str, f: FieldSpec) -> Callable[[Any], Any] | None:
    if f.is_array:
        if f.is_struct:
            sub = _struct_class(owner_name, f)

            def fix_structs(v):
                if v is None:
                    return v
                items = tuple(sub(**item) if isinstance(item, dict) else item for item in v)
                return v if isinstance(v, tuple) and all(a is b for a, b in zip(items, v)) else items
            return fix_structs

        def fix_array(v):
            return tuple(v) if isinstance(v, list) else v
        return fix_array
    if f.is_struct:
        sub = _struct_class(owner_name, f)

        def fix_struct(v):
            return sub(**v) if isinstance(v, dict) else v
        return fix_struct
    return None


def _make(name: str, qualname: str, owner_name: str, fields: tuple, spec: Any, extra: list) -> type:
    specs = []
    normalize = []
    for f in fields:
        specs.append((f.name, Any, dataclasses.field(default_factory=_class_default(f, owner_name))))
        fix = _normalizer(owner_name, f)
        if fix is not None:
            normalize.append((f.name, fix))
    cls = dataclasses.make_dataclass(name, specs + extra, bases=(Message,), frozen=True,
                                     namespace={"SPEC": spec, "FIELDS": fields, "_normalize": tuple(normalize)})
    cls.__qualname__ = qualname
    cls.__module__ = "engine.protocol.classes"
    return cls


_STRUCTS: dict = {}


def _struct_class(owner_name: str, f: FieldSpec) -> type:
    key = (owner_name, f.struct_name)
    cls = _STRUCTS.get(key)
    if cls is None:
        cls = _STRUCTS[key] = _make(f.struct_name, f"{owner_name}.{f.struct_name}", owner_name, f.fields, f, [])
    return cls


@functools.lru_cache(maxsize=None)
def message_class(name: str, version_field: bool = False) -> type:
    """The generated class of a definition (``message_class("TopicRecord")``), cached.

    ``version_field=True`` adds a last field ``version`` (default: the highest valid version),
    for messages framed with their version (ApiMessageAndVersion); its struct classes hang off
    the class by name."""
    spec: MessageSpec = load_message(name)
    extra = [("version", int, dataclasses.field(default=spec.valid.high))] if version_field else []
    cls = _make(spec.name, spec.name, spec.name, spec.fields, spec, extra)
    for (owner, struct_name), sub in list(_STRUCTS.items()):
        if owner == spec.name:
            setattr(cls, struct_name, sub)
    return cls
