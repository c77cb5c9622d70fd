"""JSON that comes from outside (a command log, a command-line argument), parsed with limits.

``json.loads`` raises ``RecursionError`` on input nested a thousand deep, and a value nested a
few hundred deep can still blow the stack of whatever walks it next (``copy.deepcopy``,
``json.dumps``). Nothing the engine reads is nested more than a few levels, so anything deeper
than :data:`MAX_DEPTH` is refused as a malformed request, naming where it came from.
"""
from __future__ import annotations

import json
from typing import Any

from .errors import InvalidRequestError

__all__ = ["loads", "decode_utf8", "MAX_DEPTH"]

#: Deepest nesting of arrays and objects accepted (a command log needs about 4).
MAX_DEPTH = 32


def loads(text: str, what: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``; InvalidRequestError naming ``what`` if it is not JSON or nests deeper
    than ``max_depth``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except RecursionError:
        raise InvalidRequestError(f"{what} is nested too deeply (more than {max_depth} levels of arrays and "
                                  "objects)") from None
    depth = _depth(value)
    if depth > max_depth:
        raise InvalidRequestError(f"{what} is nested {depth} levels deep; at most {max_depth} levels of arrays "
                                  "and objects are accepted")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of arrays and objects, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def decode_utf8(data: bytes, what: str) -> str:
    """``data`` as UTF-8 text; InvalidRequestError naming ``what`` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{what} is not UTF-8 text: byte {exc.object[exc.start]:#04x} at position "
                                  f"{exc.start}") from None
