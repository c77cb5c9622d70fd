"""Validation of the commands browsers send over the WebSocket.

A command is a JSON object with a ``cmd`` (the engine's envelope key) and flat fields.
Forms send every value as a string, so integers arrive as digit strings; each
:class:`Field` converts and range-checks its value and produces a message a person can
act on. Extra keys that htmx adds (``HEADERS``) are ignored; any other unknown key is an
error, so typos do not pass silently. ``type`` names the socket's own messages (``sync``,
a room's ``predict``), never a command: a command sent as ``{"type": ...}`` is refused with
one line saying to name it with ``cmd``.

An engine command's fields are not written here: :func:`command_fields` derives them
from the engine's field metadata (``engine/cluster/commands.py``,
``engine/storage_commands.py``), narrowed only by the demo host's caps and the world's
shape.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from django.utils.translation import gettext as _

from engine.cluster.commands import ACKS

__all__ = ["Field", "CommandSpec", "CommandError", "validate_command", "command_name", "command_fields", "TextRule",
           "IGNORED_KEYS"]

# htmx's ws extension adds the request headers under HEADERS; cmd names the command.
IGNORED_KEYS = frozenset({"HEADERS", "cmd"})


class CommandError(Exception):
    """A command refused before or while it ran; sent to the one client that sent it.

    ``code`` is machine-readable ("invalid", "unknown_type", "rate_limited", "quota", "busy",
    "engine", "not_found", "expired", "too_large", "internal"); ``field`` names the form field to
    highlight, when one is at fault."""

    def __init__(self, code: str, message: str, field: str | None = None, command: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.command = command

    def to_message(self) -> dict[str, Any]:
        return {"type": "error", "code": self.code, "message": self.message, "field": self.field,
                "command": self.command}


@dataclass(frozen=True)
class Field:
    """One field of a command. ``kind`` is "int", "str", "bool" or "dict" (for "dict",
    ``choices`` are the names it may hold)."""

    name: str
    kind: str
    label: str
    default: Any = None
    required: bool = False
    min: int | None = None
    max: int | None = None
    max_length: int | None = None
    pattern: str | None = None           # for "str": a full-match regex
    pattern_help: str = ""
    choices: tuple | None = None

    def clean(self, raw: Any, command: str) -> Any:
        if raw is None or (isinstance(raw, str) and raw.strip() == "" and self.kind != "str"):
            if self.required:
                raise CommandError("invalid", _("%(label)s is required.") % {"label": self.label}, self.name, command)
            return self.default
        if self.kind == "int":
            value = _to_int(raw)
            if value is None:
                raise CommandError("invalid", _("%(label)s must be a whole number, got %(raw)s.")
                                   % {"label": self.label, "raw": _show(raw)}, self.name, command)
            if self.min is not None and value < self.min or self.max is not None and value > self.max:
                raise CommandError("invalid", _("%(label)s must be between %(min)s and %(max)s, got %(value)s.")
                                   % {"label": self.label, "min": self.min, "max": self.max, "value": value},
                                   self.name, command)
        elif self.kind == "dict":     # an engine "dict" field: names (``choices``, when given) to values
            if not isinstance(raw, dict) or (self.required and not raw):
                raise CommandError("invalid", _("%(label)s must name at least one setting, got %(raw)s.")
                                   % {"label": self.label, "raw": _show(raw)}, self.name, command)
            for k, v in raw.items():
                if self.choices is not None and k not in self.choices:
                    raise CommandError("invalid", f"{self.label}: {_show(k)} is not one of "
                                       f"{', '.join(map(str, self.choices))}.", self.name, command)
                if not isinstance(v, (str, int, float, bool)) or isinstance(v, str) and self.max_length is not None \
                        and len(v) > self.max_length:
                    raise CommandError("invalid", f"{self.label}: the value of {k} must be a short string, number "
                                       f"or boolean, got {_show(v)}.", self.name, command)
            # A form sends text: a whole number or true/false is sent to the engine as one.
            return {k: _to_int(v) if _to_int(v) is not None else
                    (v.lower() == "true" if isinstance(v, str) and v.lower() in ("true", "false") else v)
                    for k, v in raw.items()}
        elif self.kind == "bool":
            if isinstance(raw, bool):
                value = raw
            elif isinstance(raw, str) and raw.lower() in ("true", "on", "1", "yes", "false", "off", "0", "no"):
                value = raw.lower() in ("true", "on", "1", "yes")
            else:
                raise CommandError("invalid", _("%(label)s must be true or false, got %(raw)s.")
                                   % {"label": self.label, "raw": _show(raw)}, self.name, command)
        else:
            if not isinstance(raw, str):
                raise CommandError("invalid", _("%(label)s must be text, got %(raw)s.") % {"label": self.label, "raw": _show(raw)},
                                   self.name, command)
            value = raw
            if self.max_length is not None and len(value) > self.max_length:
                raise CommandError("invalid", _("%(label)s is %(n)s characters long; the limit is %(max)s.")
                                   % {"label": self.label, "n": len(value), "max": self.max_length}, self.name, command)
            if self.pattern is not None and value and not re.fullmatch(self.pattern, value):
                raise CommandError("invalid", _("%(label)s %(help)s.") % {"label": self.label, "help": self.pattern_help
                                   or _("has characters that are not allowed")}, self.name, command)
        if self.choices is not None and value not in self.choices:
            raise CommandError("invalid", f"{self.label} must be one of {', '.join(map(str, self.choices))}; "
                               f"got {_show(raw)}.", self.name, command)
        return value


@dataclass(frozen=True)
class CommandSpec:
    """A command type: its fields and the sandbox method that runs it."""

    type: str
    fields: tuple[Field, ...] = ()
    handler: str = ""                    # method name on the sandbox kind
    help: str = ""
    extra: dict = field(default_factory=dict)


def validate_command(specs: dict[str, CommandSpec], message: Any) -> tuple[CommandSpec, dict[str, Any]]:
    """Return the spec and the cleaned values, or raise :class:`CommandError`."""
    if not isinstance(message, dict):
        raise CommandError("invalid", "A command must be a JSON object with a \"cmd\".")
    ctype = command_name(message)
    if "cmd" not in message and isinstance(message.get("type"), str):
        raise CommandError("unknown_type", f"Commands are named with \"cmd\", not \"type\": send "
                           f"{{\"cmd\": {_show(message['type'])}, ...}}.")
    if not isinstance(ctype, str) or not ctype:
        raise CommandError("unknown_type", "A command needs a \"cmd\" naming what to do; "
                           f"known commands: {', '.join(sorted(specs))}.")
    spec = specs.get(ctype)
    if spec is None:
        raise CommandError("unknown_type", f"Unknown command type {_show(ctype)}; known types: "
                           f"{', '.join(sorted(specs))}.", command=None)
    known = {f.name for f in spec.fields}
    unknown = sorted(k for k in message if k not in known and k not in IGNORED_KEYS)
    if unknown:
        raise CommandError("invalid", f"Unknown field(s) for {ctype}: {', '.join(map(_show, unknown))}. "
                           f"Known: {', '.join(sorted(known)) or 'none'}.", unknown[0], ctype)
    values = {f.name: f.clean(message.get(f.name), ctype) for f in spec.fields}
    return spec, values


def command_name(message: Any) -> str | None:
    """The name of the command ``message`` asks for: its ``cmd``; None when there is no
    such string."""
    name = message.get("cmd") if isinstance(message, dict) else None
    return name if isinstance(name, str) else None


_FIELD_KINDS = {"int": "int", "int?": "int", "str": "str", "str?": "str", "topic": "str", "bool": "bool",
                "dict": "dict", "scope_target": "int"}    # a form's set_config targets a broker, not a topic


@dataclass(frozen=True)
class TextRule:
    """What a form's text field may hold (the engine takes any string; a demo host does not)."""

    max_length: int
    pattern: str
    help: str


def command_fields(cls: type, *, defaults: Mapping[str, Any] | None = None, caps: Mapping[str, int] | None = None,
                   narrow: Mapping[str, Mapping[str, Any] | None] | None = None, text: TextRule,
                   labels: Mapping[str, Any] | None = None) -> tuple[Field, ...] | None:
    """The form fields of engine command ``cls``, from its field metadata: kind, default,
    bounds and choices. ``caps`` lowers a numeric field's maximum (the demo host's policy);
    ``narrow`` replaces attributes of one field (the world's shape: its partitions, its
    segment size), or leaves an optional field out (None) where the world has no use for it;
    ``defaults`` fills fields the page leaves out. Optional fields a form
    cannot send (lists, objects) are left out; a command needing one gives None."""
    defaults, caps, narrow, labels = defaults or {}, caps or {}, narrow or {}, labels or {}
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        kind = meta.get("kind", "")
        if kind == "acks":     # the engine's names of Kafka's acks values (engine.cluster.commands.ACKS)
            out.append(Field(f.name, "str", "acks", default=next(k for k, v in ACKS.items() if v == f.default),
                             choices=tuple(ACKS)))
            continue
        web_kind = _FIELD_KINDS.get(kind)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if web_kind is None:
            if has_default:
                continue      # a list or object a form cannot send: the engine's default applies
            return None
        if f.name in narrow and narrow[f.name] is None:
            assert has_default, f"{cls.__name__}.{f.name} is required; a world cannot leave it out"
            continue          # a field this world has no use for: the form refuses it as unknown
        default = defaults.get(f.name, f.default if f.default is not dataclasses.MISSING else None)
        low, high = meta.get("low"), meta.get("high")
        cap = caps.get(f.name)
        if web_kind == "int" and cap is not None:
            high = cap if high is None else min(high, cap)
        attrs: dict[str, Any] = dict(
            default=default, required=not has_default and f.name not in defaults,
            min=int(low) if web_kind == "int" and low is not None else None,
            max=int(high) if web_kind == "int" and high is not None else None,
            max_length=text.max_length if web_kind in ("str", "dict") else None,
            pattern=text.pattern if web_kind == "str" else None,
            pattern_help=text.help, choices=meta.get("choices"))
        attrs.update(narrow.get(f.name, {}))
        out.append(Field(f.name, web_kind, labels.get(f.name, f.name.replace("_", " ")), **attrs))
    return tuple(out)


def _to_int(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d{1,12}\s*", raw):
        return int(raw)
    return None


def _show(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."
