"""Delayed operations and their purgatory, as Kafka's brokers keep them.

A :class:`DelayedOperation` is a request that cannot be answered yet: a produce with
``acks=all`` waiting for the high watermark to pass its last offset (``DelayedProduce``),
a fetch waiting for ``fetch.min.bytes`` (``DelayedFetch``). It is completed exactly once,
either because its condition became true (``try_complete`` calls ``force_complete``) or
because its timeout fired on the :class:`~engine.timer.SystemTimer` (then
``on_expiration`` runs before ``on_complete``).

:meth:`DelayedOperationPurgatory.try_complete_else_watch` tries the operation, watches it
under its keys (topic-partitions), tries once more (the condition may have become true
in between, in Kafka on another thread) and only then arms its timeout.
:meth:`~DelayedOperationPurgatory.check_and_complete` is what the partition calls when
something a watcher waits for changed (the HW moved, bytes arrived).

Facts from Kafka's ``DelayedOperation.scala`` / ``DelayedOperationPurgatory``; ours in code.
"""
from __future__ import annotations

from typing import Any, Hashable, Iterable

from .timing_wheel import SystemTimer, TimerTask

__all__ = ["DelayedOperation", "DelayedOperationPurgatory"]


class DelayedOperation:
    """Subclass and implement :meth:`try_complete`, :meth:`on_complete` and, if the
    timeout needs to say something, :meth:`on_expiration`."""

    def __init__(self, delay_ms: int, name: str = "") -> None:
        if delay_ms < 0:
            raise ValueError(f"delay must be >= 0, got {delay_ms}")
        self.delay_ms = delay_ms
        self.name = name or type(self).__name__
        self.completed = False
        self.expired = False
        self.timer_task: TimerTask | None = None
        self._timer: SystemTimer | None = None

    # ---- to implement ------------------------------------------------------
    def try_complete(self) -> bool:
        """Check the condition; call :meth:`force_complete` and return its result if it
        holds, else return False."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Build the answer. Runs exactly once, whether completed or expired."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called (before :meth:`on_complete`) when the timeout fired."""

    # ---- the machinery -------------------------------------------------------
    def force_complete(self) -> bool:
        """Complete now unless already completed. True only for the call that did."""
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None and self.timer_task is not None:
            self._timer.cancel(self.timer_task)
        self.on_complete()
        return True

    def _expire(self) -> None:
        if self.completed:
            return
        self.expired = True
        self.on_expiration()
        self.force_complete()


class DelayedOperationPurgatory:
    """Operations waiting under keys, with their timeouts on ``timer``.

    Watcher lists keep completed operations until :meth:`purge` (Kafka purges when the
    estimated count passes ``purge_interval``; so do we, at the same points)."""

    def __init__(self, name: str, timer: SystemTimer, purge_interval: int = 1000) -> None:
        self.name = name
        self.timer = timer
        self.purge_interval = purge_interval
        self.watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._watched_since_purge = 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """True when ``op`` completed at once; otherwise it waits under ``keys``."""
        keys = list(keys)
        if not keys:
            raise ValueError("a delayed operation needs at least one key to watch")
        if op.try_complete():
            return True
        watchers = self.watchers
        for key in keys:
            if op.completed:
                break
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = [op]
            else:
                ops.append(op)
            self._watched_since_purge += 1
        # Kafka checks again here: on its threads the condition may have become true while the
        # watchers were added. Here nothing runs between the two, so the first check stands.
        if op.completed:
            return True
        op._timer = self.timer
        op.timer_task = self.timer.add(op.delay_ms, op._expire, name=f"{self.name}:{op.name}")
        if self._watched_since_purge > self.purge_interval:
            self.purge()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try every operation watched under ``key``; returns how many completed."""
        ops = self.watchers.get(key)
        if not ops:
            return 0
        done = 0
        if len(ops) == 1:
            # One watcher (the request path's usual case): the same steps without the copies.
            op = ops[0]
            if not op.completed and op.try_complete():
                done = 1
            if len(ops) == 1 and ops[0] is op and op.completed:
                ops.clear()
                del self.watchers[key]
                return done
        else:
            for op in list(ops):
                if not op.completed and op.try_complete():
                    done += 1
        ops[:] = [op for op in ops if not op.completed]
        if not ops:
            del self.watchers[key]
        return done

    def watched(self, key: Hashable | None = None) -> int:
        """Operations still pending (under ``key``, or under any key counted once)."""
        if key is not None:
            return sum(1 for op in self.watchers.get(key, ()) if not op.completed)
        return len({id(op) for ops in self.watchers.values() for op in ops if not op.completed})

    def purge(self) -> int:
        """Drop completed operations from every watcher list; returns how many went."""
        removed = 0
        for key in list(self.watchers):
            ops = self.watchers[key]
            kept = [op for op in ops if not op.completed]
            removed += len(ops) - len(kept)
            if kept:
                self.watchers[key] = kept
            else:
                del self.watchers[key]
        self._watched_since_purge = 0
        return removed

    def state(self) -> dict[str, Any]:
        return {"name": self.name,
                "watching": {str(k): [op.name for op in ops if not op.completed] for k, ops in self.watchers.items()}}
