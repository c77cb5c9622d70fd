"""Waiting for the outcome of a coordinator's own appends.

A group or transaction coordinator acts on a write to its internal topic only once the
append is acknowledged (acks=all): an OffsetCommit is answered, a GroupMetadata record lets
SyncGroup complete, a transaction state change takes effect. The outcome of an append lands
in ``cluster.produce_results[request id]``; a :class:`ProduceWaiter` checks its request ids
every ``poll_ms`` on one periodic scheduler task (started with the first id, cancelled when
none is left) and calls each id's handler with the result, in request-id order.

``lane`` orders kinds of writes one waiter serves: every lane is handled before the next,
each in request-id order, and a lane's ids are read when its turn comes (an id added by a
handler of an earlier lane is handled in the same round if its result is there).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["ProduceWaiter", "POLL_MS"]

POLL_MS = 5


class ProduceWaiter:
    """Request ids a coordinator waits on, and what to do with each outcome."""

    def __init__(self, cluster: Any, name: str, lanes: int = 1, after: Callable[[], None] | None = None,
                 poll_ms: int = POLL_MS) -> None:
        self.cluster = cluster
        self.name = name              # the scheduler task's name
        self.poll_ms = poll_ms
        self.after = after            # runs after every round
        self.lanes: list[dict[int, tuple]] = [{} for _ in range(lanes)]
        self.task = None

    def watch(self, rid: int, handler: Callable[..., None], *args: Any, lane: int = 0) -> None:
        """Call ``handler(result, *args)`` once request ``rid`` has its outcome."""
        self.lanes[lane][rid] = (handler, args)
        if self.task is None:
            self.task = self.cluster.scheduler.schedule_periodic(self.poll_ms, self.check, name=self.name)

    def waiting(self, lane: int = 0) -> list[tuple]:
        """The ``args`` of every id still waiting in ``lane``, in request-id order."""
        return [self.lanes[lane][rid][1] for rid in sorted(self.lanes[lane])]

    def __bool__(self) -> bool:
        return any(self.lanes)

    def check(self) -> None:
        results = self.cluster.produce_results
        for lane in self.lanes:
            for rid in sorted(lane):
                res = results.get(rid)
                if res is None:
                    continue
                handler, args = lane.pop(rid)
                handler(res, *args)
        if self.after is not None:
            self.after()
        if not self and self.task is not None:
            self.cluster.scheduler.cancel(self.task)
            self.task = None
