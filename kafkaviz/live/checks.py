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

``all = [check, ...]`` needs every sub-check. A task, once done, stays done: stepping
back does not take a learner's achievement away.
"""
from __future__ import annotations

import operator
from typing import Any, Iterable

__all__ = ["TaskTracker", "validate_check", "CheckError"]


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
    if "all" in check:
        for i, sub in enumerate(check["all"]):
            validate_check(sub, f"{where}.all[{i}]")
        return
    if "event" in check:
        if not isinstance(check["event"], (str, list)):
            raise CheckError(f"{where}: 'event' must name an event kind or a list of kinds")
        if not isinstance(check.get("at_least", 1), int) or not isinstance(check.get("where", {}), dict):
            raise CheckError(f"{where}: 'at_least' must be an integer and 'where' a table")
        return
    if "state" in check:
        if check.get("op", "eq") not in _OPS:
            raise CheckError(f"{where}: op must be one of {', '.join(_OPS)}")
        return
    raise CheckError(f"{where}: a check needs 'event', 'state' or 'all'")


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
        kind = ev.get("kind")
        for c in self._event_checks:
            kinds = c["event"] if isinstance(c["event"], list) else (c["event"],)
            if c.get("own") and not self.own:
                continue
            if kind in kinds and all(ev.get(k) == v for k, v in (c.get("where") or {}).items()):
                self.counts[id(c)] = self.counts.get(id(c), 0) + 1

    def _holds(self, check: dict, state: dict) -> bool:
        if "all" in check:
            return all(self._holds(c, state) for c in check["all"])
        if "event" in check:
            return self.counts.get(id(check), 0) >= check.get("at_least", 1)
        return bool(_OPS[check.get("op", "eq")](_path(state, check["state"]), check.get("value")))

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


def _leaves(check: dict) -> list[dict]:
    if "all" in check:
        return [leaf for c in check["all"] for leaf in _leaves(c)]
    return [check]
