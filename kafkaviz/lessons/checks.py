"""Try-it checks: the one place that decides whether a learner did a task.

A lesson file states each task's ``check`` as data; this module evaluates it on what
the engine did (its events) and on the sandbox's state. Two forms:

* ``{event = "segment_rolled", where = {partition = 0}, at_least = 2}`` -- at least
  N events of that kind whose fields equal the ``where`` values. ``event`` may also be
  a list of kinds; ``own = true`` counts only events after the learner's own command
  (not the guided steps').
* ``{state = "partition.isr", op = "len_lt", value = 2}`` -- a dotted path into the
  sandbox's state (list indexes allowed: ``lanes.0.leo``) compared with ``op``:
  ``eq``, ``ne``, ``ge``, ``le``, ``gt``, ``lt``, ``len_ge``, ``len_lt``, ``contains``,
  ``nonempty``.

``all = [check, ...]`` needs every sub-check, ``any = [check, ...]`` one of them, and
``not = check`` holds while its check does not (``not = { event = "check_acked_record_lost" }``:
nothing acknowledged was lost). A task, once done, stays done: stepping back does not take a
learner's achievement away.

The same checks decide a lesson step's *prediction* ("what will happen?"):
:func:`evaluate` runs one on the events of that step alone and the state after it.
"""
from __future__ import annotations

import operator
from typing import Any, Iterable

__all__ = ["TaskTracker", "validate_check", "evaluate", "CheckError"]


class CheckError(ValueError):
    """A check in a lesson file is malformed."""


_OPS = {
    "eq": operator.eq, "ne": operator.ne, "ge": operator.ge, "le": operator.le, "gt": operator.gt,
    "lt": operator.lt,
    "len_ge": lambda a, b: a is not None and len(a) >= b,
    "len_lt": lambda a, b: a is not None and len(a) < b,
    "contains": lambda a, b: a is not None and b in a,
    "nonempty": lambda a, _b: bool(a),
}


def validate_check(check: dict, where: str = "check") -> None:
    """Raise :class:`CheckError` unless ``check`` is one of the forms above."""
    if not isinstance(check, dict):
        raise CheckError(f"{where}: a check must be a table, got {type(check).__name__}")
    for key in ("all", "any"):
        if key in check:
            if not isinstance(check[key], list) or not check[key]:
                raise CheckError(f"{where}: {key!r} must be a non-empty list of checks")
            for i, sub in enumerate(check[key]):
                validate_check(sub, f"{where}.{key}[{i}]")
            return
    if "not" in check:
        validate_check(check["not"], f"{where}.not")
        return
    if "event" in check:
        if not isinstance(check["event"], (str, list)):
            raise CheckError(f"{where}: 'event' must name an event kind or a list of kinds")
        if not isinstance(check.get("at_least", 1), int) or not isinstance(check.get("where", {}), dict):
            raise CheckError(f"{where}: 'at_least' must be an integer and 'where' a table")
        return
    if "state" in check:
        if not isinstance(check["state"], str):
            raise CheckError(f"{where}: 'state' must be a dotted path such as \"partition.isr\"")
        if check.get("op", "eq") not in _OPS:
            raise CheckError(f"{where}: op must be one of {', '.join(_OPS)}")
        return
    raise CheckError(f"{where}: a check needs 'event', 'state', 'all', 'any' or 'not' "
                     f"(it has {', '.join(map(repr, check)) or 'no keys'})")


def _path(state: Any, path: str) -> Any:
    cur = state
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


class TaskTracker:
    """Counts the events each event-check asks about and decides tasks."""

    def __init__(self, tasks: Iterable[Any]) -> None:
        self.tasks = list(tasks)
        for t in self.tasks:
            validate_check(t.check, f"task {t.id}")
        self.counts: dict[int, int] = {}     # id(check dict) -> matching events so far
        self.done: set[str] = set()
        self.own = False     # the learner has sent a command of their own in this run
        self._event_checks = [c for t in self.tasks for c in _leaves(t.check) if "event" in c]
        self._kinds = frozenset(k for c in self._event_checks
                                for k in (c["event"] if isinstance(c["event"], list) else (c["event"],)))

    def on_envelope(self, env: Any) -> None:
        """:meth:`on_event` of an engine envelope, made into its plain dict only when some
        check asks about its kind (most events concern no task)."""
        if env.event.kind in self._kinds:
            self.on_event(env.to_dict())

    def on_event(self, ev: dict[str, Any]) -> None:
        for c in self._event_checks:
            if c.get("own") and not self.own:
                continue
            if _matches(c, ev):
                self.counts[id(c)] = self.counts.get(id(c), 0) + 1

    def _holds(self, check: dict, state: dict) -> bool:
        return _holds(check, state, lambda c: self.counts.get(id(c), 0))

    def state(self, state: dict) -> list[dict[str, Any]]:
        out = []
        for t in self.tasks:
            if t.id not in self.done and self._holds(t.check, state):
                self.done.add(t.id)
            progress = ""
            leaves = [c for c in _leaves(t.check) if "event" in c]
            if len(leaves) == 1 and leaves[0].get("at_least", 1) > 1:
                progress = f"{min(self.counts.get(id(leaves[0]), 0), leaves[0]['at_least'])}/{leaves[0]['at_least']}"
            out.append({"id": t.id, "done": t.id in self.done, "progress": progress})
        return out


def _matches(check: dict, ev: dict[str, Any]) -> bool:
    kinds = check["event"] if isinstance(check["event"], list) else (check["event"],)
    return ev.get("kind") in kinds and all(ev.get(k) == v for k, v in (check.get("where") or {}).items())


def _holds(check: dict, state: dict, count: Any) -> bool:
    if "all" in check:
        return all(_holds(c, state, count) for c in check["all"])
    if "any" in check:
        return any(_holds(c, state, count) for c in check["any"])
    if "not" in check:
        return not _holds(check["not"], state, count)
    if "event" in check:
        return count(check) >= check.get("at_least", 1)
    return bool(_OPS[check.get("op", "eq")](_path(state, check["state"]), check.get("value")))


def _leaves(check: dict) -> list[dict]:
    for key in ("all", "any"):
        if key in check:
            return [leaf for c in check[key] for leaf in _leaves(c)]
    if "not" in check:
        return _leaves(check["not"])
    return [check]


def evaluate(check: dict, events: Iterable[dict[str, Any]], state: dict) -> tuple[bool, list[dict[str, Any]]]:
    """Whether ``check`` holds for these events alone (``own`` is ignored) and this state,
    and the events its event leaves matched, in order: the evidence a page can narrate."""
    leaves = [c for c in _leaves(check) if "event" in c]
    counts: dict[int, int] = {}
    matched: list[dict[str, Any]] = []
    for ev in events:
        hit = False
        for c in leaves:
            if _matches(c, ev):
                counts[id(c)] = counts.get(id(c), 0) + 1
                hit = True
        if hit:
            matched.append(ev)
    return _holds(check, state, lambda c: counts.get(id(c), 0)), matched
