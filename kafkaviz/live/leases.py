"""What a socket holds, it holds as a lease: no count depends on ``disconnect()`` running.

A socket takes places (its address's socket quota, a watcher on its sandbox, a room
member's presence), and each place is a lease with an expiry that the socket's process
renews while the socket lives. Daphne cancels a consumer that has not finished this long
after its client left (``application_close_timeout``, 10 s): a client that floods a socket
and closes it leaves a consumer busy with the flood, cancelled before its ``disconnect()``
runs. A process killed with ``kill -9`` runs nothing at all.

So each process keeps its live sockets here (one registry per process) and a heartbeat
every ``LEASE_SECONDS / 4``:

1. a socket whose task has ended without giving its places back (cancelled, crashed) gives
   them back now (``release()``, the same code ``disconnect()`` runs; it runs once);
2. every other socket's leases are renewed through the router (``keep``): watcher leases on
   the runtime that owns the sandbox (in any process), socket and member places in the
   process's table or in Redis.

A lease nobody renews (its process died) lapses after ``LEASE_SECONDS`` (the router's
``OWNER_TTL_S`` for the places in Redis); counts (``/healthz``, quotas, the roster) only
see live leases.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("kafkaviz.leases")

__all__ = ["LiveSockets", "live_sockets", "lease_seconds", "Leases", "lapse"]


def lapse(held: dict[str, float], now: float) -> dict[str, float]:
    """Drop the leases of ``held`` (holder → expiry) that expired by ``now``; returns ``held``.
    A copy first (taken atomically): a worker thread may add one meanwhile."""
    for holder, expiry in list(held.items()):
        if expiry <= now:
            held.pop(holder, None)
    return held


class Leases(dict):
    """Capped places held as leases, in one process: key → {holder → expiry}. The runtime
    keeps a client address's sockets and a room member's sockets in these (the Redis router
    keeps them in sorted sets, the same rules); a key with no live lease is dropped."""

    def live(self, key: str, now: float) -> dict[str, float]:
        held = lapse(self.get(key, {}), now)
        if not held:
            self.pop(key, None)
        return held

    def take(self, key: str, holder: str, cap: int, expiry: float, now: float) -> bool:
        """A place under ``key``, at most ``cap`` (0: no cap) held at once; a holder keeps
        its own. False when full."""
        held = self.live(key, now)
        if holder not in held and cap and len(held) >= cap:
            return False
        self.setdefault(key, held)[holder] = expiry
        return True

    def drop(self, key: str, holder: str | None = None) -> None:
        """Give back ``holder``'s place (None: the newest)."""
        held = self.get(key)
        if held:
            held.pop(next(reversed(held)) if holder is None else holder, None)
            if not held:
                del self[key]

    def renew(self, keys: dict[str, list[str]], expiry: float, now: float) -> None:
        """The heartbeat: these holders under these keys are alive (a place given back stays so)."""
        for key, holders in keys.items():
            held = self.get(key)
            for holder in holders:
                if held is not None and holder in held:
                    held[holder] = expiry
            self.live(key, now)

    def count(self, now: float) -> int:
        return sum(len(self.live(key, now)) for key in list(self))


def lease_seconds() -> float:
    from django.conf import settings

    return float(settings.KAFKAVIZ_RUNTIME.get("LEASE_SECONDS", 20))


class LiveSockets:
    """This process's sockets, and the heartbeat that renews what they hold."""

    def __init__(self) -> None:
        self.sockets: dict[str, Any] = {}              # holder id → consumer
        self.tasks: dict[str, asyncio.Task | None] = {}
        self._beat: asyncio.Task | None = None
        self._releasing: set[asyncio.Task] = set()       # releases of dead sockets under way
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, consumer: Any) -> None:
        """Called by the consumer's ``connect`` (in its own task: the one daphne cancels)."""
        self.sockets[consumer.holder] = consumer
        self.tasks[consumer.holder] = asyncio.current_task()
        self._ensure_beat()

    def remove(self, consumer: Any) -> None:
        if self.sockets.get(consumer.holder) is consumer:
            del self.sockets[consumer.holder]
            self.tasks.pop(consumer.holder, None)

    def counts(self) -> dict[str, int]:
        """Sockets of this process that hold places (``/healthz``): all, and those of room
        members. One whose task ended still counts until the next beat gives its places back."""
        live = [c for c in self.sockets.values() if not c.released]
        return {"connections": len(live),
                "members": sum(1 for c in live if getattr(c, "member_id", None) is not None)}

    def _ended(self, holder: str) -> bool:
        task = self.tasks.get(holder)
        return task is not None and task.done()

    def _ensure_beat(self) -> None:
        loop = asyncio.get_running_loop()
        if self._beat is None or self._beat.done() or self._loop is not loop:
            if self._loop is not loop:
                # A process serves on one loop; sockets left on another (a test's loop that
                # has closed) can never run again: forget them.
                for holder, task in list(self.tasks.items()):
                    if task is not None and task.get_loop() is not loop:
                        self.sockets.pop(holder, None)
                        self.tasks.pop(holder, None)
            self._loop = loop
            self._beat = loop.create_task(self._beat_forever())

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, lease_seconds() / 4))
            try:
                await self.beat()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the heartbeat outlives any one failure
                log.exception("renewing socket leases failed")

    async def beat(self) -> None:
        """One pass: release the sockets whose task ended; renew the others' leases."""
        from .router import get_router

        loop = asyncio.get_running_loop()
        started = loop.time()

        for holder in [h for h in list(self.sockets) if self._ended(h)]:
            consumer = self.sockets.pop(holder)
            self.tasks.pop(holder, None)
            if not consumer.released:
                log.warning("a socket ended without closing; releasing what it held",
                            extra={"event": "socket_released_late"})
                # In a task of its own: a release that waits (an owner process that died) must
                # not hold up the renewals of the live sockets below.
                task = asyncio.ensure_future(consumer.release())
                task.add_done_callback(_log_failure)
                self._releasing.add(task)
                task.add_done_callback(self._releasing.discard)
        watchers: dict[str, list[str]] = {}
        addresses: dict[str, list[str]] = {}
        places: dict[str, list[str]] = {}
        for holder, consumer in list(self.sockets.items()):
            if consumer.released:
                continue
            sandbox, address, keys = consumer.held()
            if sandbox:
                watchers.setdefault(sandbox, []).append(holder)
            if address is not None:
                addresses.setdefault(address, []).append(holder)
            for key in keys:
                places.setdefault(key, []).append(holder)
        collected = loop.time()
        if watchers or addresses or places:
            await get_router().keep(watchers, addresses, places)
        took = loop.time() - started
        if took > 0.25:
            log.warning("renewing socket leases took %.0f ms (collecting %.0f ms)", took * 1000,
                        (collected - started) * 1000, extra={"event": "lease_beat_slow", "sockets": len(self.sockets)})


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("releasing a dead socket failed (its leases lapse on their own)", exc_info=task.exception())


_live = LiveSockets()


def live_sockets() -> LiveSockets:
    return _live
