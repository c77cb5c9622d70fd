"""The runtime: owns the sandboxes of this process and publishes their frames.

One :class:`Sandbox` per (browser session, lesson): a server-generated id, a data
directory ``<KAFKAVIZ_DATA_DIR>/<id>/`` (nothing from the client is used in the
path), one engine holder of a registered kind (``kinds.py``), a frame builder and a
lock. Commands run one at a time per sandbox in a worker thread, so the event loop
keeps serving other clients while the engine works.

Frames are serialised once, to JSON text, and published with
``channel_layer.group_send`` to the group ``sandbox.<id>`` as the ASGI event that sends
it, ``{"type": "websocket.send", "text": ...}``: no layer copies a big dict per watcher,
each consumer hands the same event to its server as it is, and with the Redis channel
layer any process's consumers can watch.

Limits (``settings.KAFKAVIZ_RUNTIME``): sandboxes per process and per client address,
a command-rate bucket per sandbox, a bound on commands queued per sandbox (a busy
sandbox cannot take the worker threads everybody shares), and reclaim of sandboxes
nobody has watched for ``IDLE_SECONDS`` (a reload reconnects long before). Reclaim
runs in a background task, in batches, off any visitor's request. Without Redis the
runtime is also the socket's router (``router.get_router()``): a consumer calls it
directly. With several processes, ``router.RedisRouter`` gets a request to the process
that owns the sandbox (docs/web.md, "Several processes").
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.errors import KafkaError

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from kafkaviz.lessons.content import DJANGO_LANG, load_content

from .frames import FrameBuilder, frame_text
from .kinds import Limits, SandboxKind, get_kind
from .leases import Leases, lapse
from .validation import CommandError, CommandSpec, Field, validate_command

__all__ = ["Runtime", "Sandbox", "TokenBucket", "get_runtime", "set_runtime", "group_name", "new_sandbox_id",
           "SANDBOX_ID_RE", "BUSY_MESSAGE", "frame_text"]

log = logging.getLogger("kafkaviz.runtime")

SANDBOX_ID_RE = re.compile(r"^[0-9a-f]{32}$")

RUN_FORMAT = "kafkaviz-run"
# Commands that change nothing: a room member's run without waiting for the sandbox's turn.
READ_ONLY_COMMANDS = frozenset({"export"})
MAX_BUDGETS = 2000             # members' budgets kept per sandbox (a room admits a few hundred)


def new_sandbox_id() -> str:
    """128 random bits, hex: safe as a directory and group name and not guessable."""
    return secrets.token_hex(16)


def group_name(sandbox_id: str) -> str:
    return f"sandbox.{sandbox_id}"


BUSY_MESSAGE = ("The demo is busy: it is running as many sandboxes as it allows right now. "
                "Please try again in a minute or two.")


class TokenBucket:
    """Command-rate quota: ``rate`` commands per second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst, self.tokens, self.at = rate, burst, float(burst), now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass
class Sandbox:
    id: str
    slug: str                  # the lesson whose sandbox this is
    kind_name: str
    data_dir: Path
    engine: SandboxKind
    frames: FrameBuilder
    bucket: TokenBucket
    last_active: float
    # Who watches: a lease per socket (its holder id → expiry on the runtime's clock), which
    # the socket's process renews while the socket lives (kafkaviz/live/leases.py). A socket
    # whose close never ran (killed mid-flood, its process killed) stops renewing, and its
    # lease lapses: no count depends on a disconnect handler running.
    leases: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    address: str = ""
    queued: int = 0                     # commands waiting for or holding this sandbox
    # A room's members spend budgets of their own (``command(..., budget=)``), never the
    # sandbox's bucket or queue, so a watcher's flood cannot refuse the instructor's commands.
    budgets: dict[str, TokenBucket] = field(default_factory=dict)
    budget_queued: Counter = field(default_factory=Counter)
    room: str = ""                      # the join code, when a classroom room drives this sandbox
    lock: threading.Lock = field(default_factory=threading.Lock)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)   # commands queue here, not in threads
    flush_handle: asyncio.TimerHandle | None = None

    @property
    def watchers(self) -> int:
        return len(self.leases)


class Runtime:
    """All sandboxes of this process. ``publish`` is an async callable
    ``(group, message)``: the channel layer's ``group_send`` in production, a list in
    unit tests. ``now`` is a monotonic clock in seconds (injected for tests)."""

    def __init__(self, data_root: str | Path, *, settings: dict[str, Any],
                 publish: Callable[[str, dict], Any] | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.data_root = Path(data_root)
        self.data_root.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.publish = publish
        self.now = now
        self.sandboxes: dict[str, Sandbox] = {}
        # Open lesson sockets per client address, and other capped places (a room member's
        # sockets): leases (key → holder → expiry) the heartbeat renews, like watchers.
        self.connections = Leases()
        self.places = Leases()
        self._anonymous = 0                  # holder ids for callers that name none (tests, tools)
        self._create_lock = threading.RLock()
        self._reaper: asyncio.Task | None = None
        self._building: set[str] = set()     # ids whose engine is being built (not listed yet)
        self.loop: asyncio.AbstractEventLoop | None = None   # where frames are published (request_flush)

    def sweep_stale_dirs(self) -> list[str]:
        """Remove sandbox directories left by an earlier server run (nothing written in
        them for IDLE_SECONDS). Only names this runtime could have issued are touched."""
        cutoff = time.time() - self.settings["IDLE_SECONDS"]
        removed = []
        for child in self.data_root.iterdir():
            if (not (child.is_dir() and SANDBOX_ID_RE.match(child.name)) or child.name in self.sandboxes
                    or child.name in self._building):
                continue
            try:
                newest = max((p.stat().st_mtime for p in child.rglob("*")), default=child.stat().st_mtime)
            except OSError:
                continue  # changing under us: not stale
            if newest < cutoff:
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child.name)
        return removed

    # ---- lifecycle ---------------------------------------------------------
    @property
    def interval_s(self) -> float:
        return self.settings["FRAME_INTERVAL_MS"] / 1000.0

    def _limits(self) -> Limits:
        return Limits(self.settings["MAX_MESSAGES"], self.settings["MAX_DISK_BYTES"])

    def _build(self, sandbox_id: str, lesson: Any, seed: int, frames: FrameBuilder,
               lock: threading.Lock | None = None) -> SandboxKind:
        data_dir = self.data_root / sandbox_id
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        # The frame builder listens from the start, so the events of opening the
        # engine (recovery, the first segment) reach the browser too: in a reset's frame,
        # and a new sandbox's in each page's snapshot (_create). In step mode each
        # event carries the state right after it (once the engine is fully built).
        frames.state_fn = None
        engine = get_kind(lesson.kind)(data_dir, seed=seed, limits=self._limits(), lesson=lesson,
                                       listener=frames.add, lang=frames.lang)
        frames.state_fn = engine.state
        engine.defer_checkpoints = True      # taken after the frame leaves (command)
        engine.cut_hook = lambda: frames.cut(engine.state())
        engine.touch_hook = frames.touch
        # For work the engine does outside a command (a real client's requests through the
        # sandbox's listener, client_listener.py): the sandbox's lock, and a thread-safe way
        # to have the frames it caused published.
        engine.lock = lock
        engine.flush_hook = lambda: self.request_flush(sandbox_id)
        return engine

    def is_full(self) -> bool:
        return len(self.sandboxes) >= self.settings["MAX_SANDBOXES"]

    @property
    def lease_s(self) -> float:
        return float(self.settings.get("LEASE_SECONDS", 20))

    def _holder(self, holder: str | None) -> str:
        if holder:
            return holder
        self._anonymous += 1
        return f"anon-{self._anonymous}"

    def _expiry(self, holder: str, now: float) -> float:
        """A socket's lease lapses unless renewed; one taken without a holder (tools and
        tests that attach and detach by hand) lasts until it is given back."""
        return float("inf") if holder.startswith("anon-") else now + self.lease_s

    def renew(self, sandbox_id: str, holders: list[str], add: bool = True) -> int:
        """These sockets (in any process) still watch the sandbox: push their leases (with
        ``add``, taking one for a holder this runtime does not know: the sandbox was rebuilt
        here after a takeover). Returns how many watch it now, or -1 if it is not live here."""
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            return -1
        # No create lock here: this runs on the event loop, and a worker thread may hold that
        # lock for as long as an engine takes to build.
        now = self.now()
        expiry = now + self.lease_s
        for holder in holders:
            if add or holder in sb.leases:
                sb.leases[holder] = expiry
        lapse(sb.leases, now)
        sb.last_active = now
        return sb.watchers

    def _create(self, sandbox_id: str, slug: str, lang: str, address: str = "",
                holder: str | None = None) -> Sandbox:
        if not SANDBOX_ID_RE.match(sandbox_id):
            raise CommandError("not_found", "This sandbox id is not one the server issued.")
        lesson = load_content(slug, lang)
        if lesson is None or lesson.kind is None:
            raise CommandError("not_found", f"Lesson {slug!r} has no live sandbox.")
        with self._create_lock:
            sb = self.sandboxes.get(sandbox_id)
            if sb is not None:
                if sb.slug != slug:
                    raise CommandError("not_found", "This sandbox belongs to another lesson.")
                if lesson.lang != sb.frames.lang:
                    # The page switched language: the sandbox (same session) speaks the new one
                    # from now on -- narration, step texts, replies.
                    with sb.lock:
                        sb.frames.lang = sb.engine.lang = lesson.lang
                        sb.engine.lesson = lesson
                # Count the watcher under the lock, so a concurrent reap cannot take it.
                sb.last_active = self.now()
                holder = self._holder(holder)
                sb.leases[holder] = self._expiry(holder, sb.last_active)
                return sb
            if self.is_full():
                # Reclaim happens in the background (see reap); this visitor is told to come back.
                raise CommandError("busy", BUSY_MESSAGE)
            per_address = self.settings.get("MAX_SANDBOXES_PER_ADDRESS", 0)
            if per_address and address:
                mine = [s for s in self.sandboxes.values() if s.address == address]
                if len(mine) >= per_address:
                    raise CommandError("quota", f"Your address already has {len(mine)} live sandboxes, the most "
                                       "one address may hold. Close another lesson tab, or wait a minute after "
                                       "closing one: sandboxes nobody watches are reclaimed soon.")
            frames = FrameBuilder(lesson.kind, max_events=self.settings["MAX_EVENTS_PER_FRAME"],
                                  full_every=self.settings.get("FULL_STATE_EVERY", 20), lang=lesson.lang,
                                  interval_s=self.interval_s)
            seed = int(sandbox_id[:8], 16)
            self._building.add(sandbox_id)
            lock = threading.Lock()
            try:
                engine = self._build(sandbox_id, lesson, seed, frames, lock)
            finally:
                self._building.discard(sandbox_id)
            # The events of opening it (the setup before step 1) reach each page in its
            # snapshot; left buffered, they rode again in step 1's first frame only.
            frames.forget_pending()
            now = self.now()
            sb = Sandbox(sandbox_id, slug, lesson.kind, self.data_root / sandbox_id, engine, frames,
                         TokenBucket(self.settings["COMMANDS_PER_SECOND"], self.settings["COMMAND_BURST"], now),
                         last_active=now, seed=seed, address=address, lock=lock,
                         leases={(holder := self._holder(holder)): self._expiry(holder, now)})
            self.sandboxes[sandbox_id] = sb
            log.info("sandbox created", extra={"event": "sandbox_created", "sandbox": sandbox_id[:8],
                                               "lesson": slug, "sandboxes": len(self.sandboxes)})
            return sb

    def _ensure_reaper(self) -> None:
        every = self.settings.get("REAP_EVERY_SECONDS", 0)
        if every and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.ensure_future(self._reap_forever(every))

    async def _reap_forever(self, every: float) -> None:
        # Directories an earlier run of the server left behind go first, off any request.
        try:
            await asyncio.to_thread(self.sweep_stale_dirs)
        except Exception:  # noqa: BLE001 - a failed sweep must not stop the reaper
            log.exception("sweeping stale sandbox directories failed")
        while True:
            await asyncio.sleep(every)
            try:
                await self.reap()
            except Exception:  # noqa: BLE001 - the reaper must outlive any one bad sandbox
                log.exception("reaping sandboxes failed")

    async def reap(self) -> list[str]:
        """Reclaim sandboxes nobody watches or uses, in batches of ``REAP_BATCH``, each
        batch closed in a worker thread; the event loop (and anybody connecting) runs
        between batches. Returns the ids reclaimed."""
        batch = max(1, self.settings.get("REAP_BATCH", 25))
        gone: list[str] = []
        while True:
            taken = self._unlist(None, self.settings["IDLE_SECONDS"], batch)
            if not taken:
                return gone
            await asyncio.to_thread(self._close_all, taken)
            gone += [sb.id for sb in taken]
            if len(taken) < batch:
                return gone
            await asyncio.sleep(0)

    def _unlist(self, ids: list[str] | None, idle_s: float | None, limit: int) -> list[Sandbox]:
        """Unlist up to ``limit`` of the sandboxes ``ids`` (None: all) that nobody watches or
        uses and nobody has for ``idle_s`` (None: unlist them whatever they do); quick, under
        the create lock: closing them happens outside it."""
        with self._create_lock:
            now = self.now()
            taken = []
            for sb in [self.sandboxes.get(i) for i in ids] if ids is not None else list(self.sandboxes.values()):
                if sb is None or len(taken) >= limit:
                    continue
                # Idle counts from the last renewal (``renew`` sets last_active).
                if idle_s is not None and (lapse(sb.leases, now) or sb.queued > 0 or sum(sb.budget_queued.values())
                                           or now - sb.last_active < idle_s):
                    continue
                del self.sandboxes[sb.id]
                self._unschedule(sb)
                taken.append(sb)
            return taken

    def reap_idle(self) -> list[str]:
        """Reclaim every reclaimable sandbox now, in this thread (tests, shutdown)."""
        taken = self._unlist(None, self.settings["IDLE_SECONDS"], len(self.sandboxes) or 1)
        self._close_all(taken)
        return [sb.id for sb in taken]

    def _close_all(self, sandboxes: list[Sandbox]) -> None:
        for sb in sandboxes:
            self._close(sb)

    def _close(self, sb: Sandbox) -> None:
        with sb.lock:
            try:
                sb.engine.close()
            except Exception:  # noqa: BLE001 - a broken engine is still reclaimed
                log.exception("closing sandbox %s failed", sb.id[:8])
            shutil.rmtree(sb.data_dir, ignore_errors=True)
        log.info("sandbox reclaimed", extra={"event": "sandbox_reclaimed", "sandbox": sb.id[:8],
                                             "sandboxes": len(self.sandboxes)})

    async def attach(self, sandbox_id: str, slug: str, lang: str = "en", address: str = "",
                     room: str = "", holder: str | None = None) -> dict[str, Any]:
        """A watcher of lesson ``slug`` arrives: create the sandbox if needed (narrated
        in ``lang``); return its snapshot frame. ``room``: the join code, when a classroom
        room drives this sandbox (counted in ``/healthz``). ``holder``: the socket's id,
        whose lease its process renews (``renew``) and ``detach`` gives back."""
        self._ensure_reaper()
        self.loop = asyncio.get_running_loop()
        holder = self._holder(holder)
        sb = await asyncio.to_thread(self._create, sandbox_id, slug, lang, address, holder)
        if room:
            sb.room = room
        try:
            return await asyncio.to_thread(self._snapshot, sb)
        except BaseException:
            sb.leases.pop(holder, None)
            raise

    def _snapshot(self, sb: Sandbox) -> dict[str, Any]:
        with sb.lock:
            return sb.frames.snapshot(sb.engine.state(), list(sb.engine.events.envelopes))

    async def snapshot(self, sandbox_id: str, budget: str = "") -> dict[str, Any]:
        """The current whole state for one client that asked again (``sync``); with a
        ``budget``, it is spent from that member's (see :meth:`command`)."""
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            raise CommandError("not_found", "This sandbox was reclaimed after being idle; reload the page.")
        if budget:
            self._spend(sb, budget, "sync")
            sb.budget_queued[budget] += 1
            try:
                return await asyncio.to_thread(self._snapshot, sb)
            finally:
                sb.budget_queued[budget] -= 1
        return await asyncio.to_thread(self._snapshot, sb)

    async def detach(self, sandbox_id: str, holder: str | None = None) -> None:
        sb = self.sandboxes.get(sandbox_id)
        if sb is not None:
            if holder is None:          # callers that never named one: any anonymous lease
                holder = next((h for h in reversed(sb.leases) if h.startswith("anon-")), None) or \
                    next(reversed(sb.leases), None)
            sb.leases.pop(holder, None)
            sb.last_active = self.now()

    async def discard(self, sandbox_id: str) -> None:
        await asyncio.to_thread(self._discard, sandbox_id)

    def _discard(self, sandbox_id: str) -> None:
        self._close_all(self._unlist([sandbox_id], None, 1))

    def discard_idle(self, sandbox_id: str) -> bool:
        """Reclaim the sandbox now if no socket watches it and no command waits for it (its
        session asks for a new one and its address is at its quota: docs/web.md). True if
        it was reclaimed."""
        taken = self._unlist([sandbox_id], 0, 1)
        self._close_all(taken)
        return bool(taken)

    def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        for sid in list(self.sandboxes):
            self._discard(sid)

    async def reclaim_idle(self, sandbox_ids: list[str]) -> int:
        """Reclaim those of ``sandbox_ids`` no socket watches (a session's other lessons,
        when it needs a sandbox and its address is at its quota); how many were reclaimed."""
        done = 0
        for sid in sandbox_ids:
            done += bool(await asyncio.to_thread(self.discard_idle, sid))
        return done

    # ---- leases (kafkaviz/live/leases.py) and capped places ---------------------------
    async def keep(self, watchers: dict[str, list[str]], addresses: dict[str, list[str]],
                   places: dict[str, list[str]]) -> None:
        """The heartbeat: these sockets of this process are alive; renew what they hold."""
        for sid, holders in watchers.items():
            self.renew(sid, holders, add=False)     # one process: a lease given back stays so
        now = self.now()
        self.connections.renew(addresses, now + self.lease_s, now)
        self.places.renew(places, now + self.lease_s, now)

    async def take_place(self, key: str, holder: str, cap: int) -> bool:
        """A place under ``key`` (e.g. a room member's sockets), at most ``cap`` held at once;
        a lease the heartbeat renews while its socket lives. False when full."""
        now = self.now()
        return self.places.take(key, holder, cap, now + self.lease_s, now)

    async def drop_place(self, key: str, holder: str) -> None:
        self.places.drop(key, holder)

    async def count_places(self, keys: list[str]) -> list[int]:
        return [len(self.places.live(key, self.now())) for key in keys]

    # ---- connections (counted per client address by the consumer) -----------
    async def open_connection(self, address: str, holder: str | None = None) -> bool:
        """Count a new socket from ``address`` (a lease its process renews, see ``keep``);
        False if it already has the most allowed."""
        now, holder = self.now(), self._holder(holder)
        cap = self.settings.get("MAX_CONNECTIONS_PER_ADDRESS", 0) if address else 0
        return self.connections.take(address, holder, cap, self._expiry(holder, now), now)

    async def close_connection(self, address: str, holder: str | None = None) -> None:
        self.connections.drop(address, holder)

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` reports for this process (lapsed leases not counted)."""
        now = self.now()
        return {"sandboxes": len(self.sandboxes), "max_sandboxes": self.settings["MAX_SANDBOXES"],
                "watchers": sum(len(lapse(sb.leases, now)) for sb in list(self.sandboxes.values())),
                "connections": self.connections.count(now),
                "rooms": sum(1 for sb in self.sandboxes.values() if sb.room),
                "disk_bytes": _tree_bytes(self.data_root)}

    # ---- commands ----------------------------------------------------------
    async def command(self, sandbox_id: str, message: Any, budget: str = "", *,
                      restore: bool = False) -> dict[str, Any]:
        """Validate and run one command; publish the frames it caused. Returns the
        reply for the sender, or raises :class:`CommandError` (sandbox unharmed).

        ``budget`` names whose budget a room member's command spends (``"member:<id>"``):
        a rate of its own (``MEMBER_COMMANDS_PER_SECOND`` / ``_BURST``) and at most
        ``MEMBER_MAX_QUEUED`` of its commands waiting, never the sandbox's bucket or queue,
        which stay the instructor's. A member's read-only command (``export``) does not
        queue for the sandbox's turn either: it only takes the lock for the export.
        ``restore``: a run the server kept itself (``restore``), not counted against the rate."""
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            raise CommandError("not_found", "This sandbox was reclaimed after being idle; reload the page.")
        now = self.now()
        sb.last_active = now
        specs = {**COMMON_COMMANDS, **sb.engine.commands}
        with translation.override(DJANGO_LANG.get(sb.frames.lang, "en")):
            spec, values = validate_command(specs, message)
        if budget:
            self._spend(sb, budget, spec.type)
            sb.budget_queued[budget] += 1
        elif not restore:
            if not sb.bucket.take(now):
                raise CommandError("rate_limited", f"Too many commands: this sandbox takes at most "
                                   f"{self.settings['COMMANDS_PER_SECOND']:g} per second. Wait a moment and try "
                                   "again.", command=spec.type)
            if sb.queued >= self.settings.get("MAX_QUEUED_COMMANDS", 4):
                raise CommandError("rate_limited", "This sandbox is still working on your earlier commands; "
                                   "wait for them to finish and try again.", command=spec.type)
        counted = int(not budget)    # a member's command waits in the turn but not in the sandbox's queue
        sb.queued += counted
        try:
            if budget and spec.type in READ_ONLY_COMMANDS:
                text, failure, _texts = await asyncio.to_thread(self._run, sb, spec, values, False)
            else:
                # Wait for this sandbox's turn on the event loop, not in a worker thread, so a
                # busy sandbox never holds the threads other sandboxes need.
                async with sb.turn:
                    text, failure, texts = await asyncio.to_thread(self._run, sb, spec, values)
                    # Even a refused command may have changed something first (e.g. the first
                    # of several appends): watchers see whatever the engine did.
                    if texts is None:
                        self._schedule_flush(sb)
                    elif texts and self.publish is not None:
                        self._unschedule(sb)      # this frame carries what a timer waited for
                        for frame in texts:
                            await self.publish(group_name(sb.id), {"type": "websocket.send", "text": frame})
                    # The run's checkpoint of this step, after its frame left: Back to it replays nothing.
                    await asyncio.to_thread(self._settle, sb)
            if failure is not None:
                raise failure
        finally:
            sb.queued -= counted
            if budget:
                sb.budget_queued[budget] -= 1
            sb.last_active = self.now()
        reply = {"type": "ack", "command": spec.type}
        reply.update(text if isinstance(text, dict) else {"text": text})
        return reply

    def _spend(self, sb: Sandbox, budget: str, command: str) -> None:
        """Take one token from a member's budget, or refuse (the sandbox's own budget untouched)."""
        bucket = sb.budgets.get(budget)
        if bucket is None:
            if len(sb.budgets) >= MAX_BUDGETS:      # members who left long ago: their buckets are full again
                sb.budgets.clear()
            bucket = sb.budgets[budget] = TokenBucket(self.settings.get("MEMBER_COMMANDS_PER_SECOND", 5.0),
                                                      self.settings.get("MEMBER_COMMAND_BURST", 10), self.now())
        if not bucket.take(self.now()):
            raise CommandError("rate_limited", "Too many requests from you; wait a moment and try again.",
                               command=command)
        if sb.budget_queued[budget] >= self.settings.get("MEMBER_MAX_QUEUED", 2):
            raise CommandError("rate_limited", "The server is still working on your earlier requests; wait for "
                               "them to finish and try again.", command=command)

    # ---- what the router (several processes) asks of a sandbox --------------------
    def has(self, sandbox_id: str) -> bool:
        return sandbox_id in self.sandboxes

    def current_run(self, sandbox_id: str) -> dict[str, Any] | None:
        """The sandbox's run in the export format (docs/web.md, "Runs"), its lesson and
        language, or None if it is not live here. Blocking (the sandbox's lock)."""
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            return None
        with sb.lock:
            return {"slug": sb.slug, "lang": sb.frames.lang, "data": _export(self, sb, {})["data"]}

    async def restore(self, sandbox_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Replay a run the server itself kept (the sandbox's last owner process died):
        validated and replayed like an import, not counted against the command rate."""
        return await self.command(sandbox_id, {"cmd": "import", "run": json.dumps(data)}, restore=True)

    def _run(self, sb: Sandbox, spec: CommandSpec, values: dict[str, Any], take: bool = True,
             ) -> tuple[Any, BaseException | None, list[str] | None]:
        """Run the command in this worker thread under the sandbox's lock and, when its frame
        may leave now (step mode, or the first after a quiet spell) and ``take``, build that
        frame in the same hop. Returns (reply, the exception the command raised, frame texts
        or None if paced)."""
        text: Any = None
        failure: BaseException | None = None
        with sb.lock:
            try:
                with translation.override(DJANGO_LANG.get(sb.frames.lang, "en")):
                    if "runtime" in spec.extra:
                        text = spec.extra["runtime"](self, sb, values)
                    else:
                        text = spec.handler(sb.engine, **values)
            except KafkaError as exc:
                # The engine refused (and left its state as it was): tell the sender in its words.
                failure = CommandError("engine", f"{type(exc).__name__}: {exc}", command=spec.type)
                failure.__cause__ = exc
            except Exception as exc:  # noqa: BLE001 - re-raised by command() after publishing
                failure = exc
            try:
                sb.engine.command_done(failure)
            except Exception as exc:  # noqa: BLE001 - a kind's follow-up refused (only when the command did not)
                failure = exc
            if not take:
                return text, failure, None
            now = self.now()
            due = sb.frames.step_mode or sb.frames.delay(now) <= 0
            return text, failure, sb.frames.texts(sb.engine.state, now) if due else None

    @staticmethod
    def _settle(sb: Sandbox) -> None:
        with sb.lock:
            sb.engine.settle()

    def _schedule_flush(self, sb: Sandbox) -> None:
        """A paced frame: one timer flushes whatever is buffered when the interval is up."""
        if sb.flush_handle is None:
            loop = asyncio.get_running_loop()
            sb.flush_handle = loop.call_later(sb.frames.delay(self.now()), self._spawn_flush, sb)

    def request_flush(self, sandbox_id: str) -> None:
        """From any thread: publish what the sandbox's engine did outside a command (paced
        like a command's frames)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._flush_soon, sandbox_id)

    def _flush_soon(self, sandbox_id: str) -> None:
        sb = self.sandboxes.get(sandbox_id)
        if sb is not None:
            self._schedule_flush(sb)

    def _spawn_flush(self, sb: Sandbox) -> None:
        sb.flush_handle = None
        if self.sandboxes.get(sb.id) is sb:
            task = asyncio.ensure_future(self.flush(sb))
            task.add_done_callback(_log_failure)

    async def flush(self, sb: Sandbox) -> int:
        """Publish the frames buffered in ``sb`` to its watchers; returns how many."""
        def take() -> list[str]:
            with sb.lock:
                return sb.frames.texts(sb.engine.state, self.now())

        texts = await asyncio.to_thread(take)
        if texts:
            self._unschedule(sb)
        for frame in texts if self.publish is not None else ():
            await self.publish(group_name(sb.id), {"type": "websocket.send", "text": frame})
        return len(texts)

    @staticmethod
    def _unschedule(sb: Sandbox) -> None:
        if sb.flush_handle is not None:
            sb.flush_handle.cancel()
            sb.flush_handle = None


def _tree_bytes(root: Path) -> int:
    """Bytes of the files under ``root`` (allocated size would be bigger; this is what
    the quota counts)."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


# ---- runs: export, import, share --------------------------------------------------------

def _export(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> dict[str, Any]:
    data = {"format": RUN_FORMAT, "version": 1, "lesson": sb.slug, "kind": sb.kind_name, "seed": sb.seed,
            "run": sb.engine.export_run()}
    # "file" is the JSON text to save as it is: browsers' numbers lose digits past 2**53
    # (a scenario's flush.messages=Long.MAX_VALUE), so the page must not re-serialise "data".
    return {"text": _("Here is the run as JSON."), "data": data, "file": json.dumps(data, indent=1)}


def _import_payload(sb: Sandbox, data: Any) -> str:
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT or data.get("version") != 1:
        raise CommandError("invalid", "This is not a kafkaviz run file (format \"kafkaviz-run\", version 1).",
                           "run", "import")
    # The sandbox forks any run of a lesson with the same kind of engine.
    fork = sb.slug == "sandbox" and data.get("kind") == sb.kind_name
    if data.get("lesson") != sb.slug and not fork:
        raise CommandError("invalid", f"This run belongs to lesson {str(data.get('lesson'))[:40]!r}, not to "
                           f"{sb.slug!r}; open it there.", "run", "import")
    try:
        sb.engine.import_run(data.get("run"))
    except KafkaError as exc:
        raise CommandError("engine", f"The run could not be replayed: {type(exc).__name__}: {exc}",
                           "run", "import") from exc
    st = sb.engine.state()["run"]
    return _("Run loaded: step %(n)s of %(total)s.") % {"n": st["step"], "total": st["total"]}


def _import(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> str:
    try:
        data = json.loads(values["run"])
    except ValueError:
        raise CommandError("invalid", "The file is not valid JSON.", "run", "import") from None
    return _import_payload(sb, data)


def _share(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> dict[str, Any]:
    from django.db import connections

    from .shares import share_run

    try:
        # Identical runs are stored once. A socket's share goes through the consumer, which
        # names the visitor and address whose limits it counts against (LessonConsumer).
        shared = share_run(_export(rt, sb, values)["data"])
    finally:
        connections.close_all()   # this worker thread's connection: shares are rare, threads are pooled
    return {"text": _("Share link created."), "share_id": shared.id}


def _open_shared(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> str:
    from django.db import connections

    from .models import SharedRun

    try:
        shared = SharedRun.objects.filter(pk=values["id"]).first()
        if shared is not None and shared.expired:
            shared.delete()   # purged on access; `manage.py purge_shares` purges the rest
            raise CommandError("expired", _("This share link has expired: links last %(days)s days. Ask for a "
                                            "new one.") % {"days": settings.KAFKAVIZ_SHARE_DAYS}, "id", "open_shared")
    finally:
        connections.close_all()   # this worker thread's connection: shares are rare, threads are pooled
    if shared is None or (shared.lesson != sb.slug and sb.slug != "sandbox"):
        raise CommandError("not_found", _("This share link is unknown (mistyped, or made for another lesson)."),
                           "id", "open_shared")
    return _import_payload(sb, shared.payload)


def _reset(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> str:
    sb.engine.close()
    sb.frames.mark_reset()
    sb.engine = rt._build(sb.id, sb.engine.lesson, sb.seed, sb.frames, sb.lock)
    return _("The sandbox started over.")


def _mode(rt: Runtime, sb: Sandbox, values: dict[str, Any]) -> str:
    sb.frames.step_mode = values["step"]
    return "Step mode on: every event arrives on its own." if values["step"] else "Live mode on."


# Commands every kind understands; the runtime runs them itself (``extra["runtime"]``:
# ``(runtime, sandbox, values) -> reply``).
COMMON_COMMANDS: dict[str, CommandSpec] = {
    "reset": CommandSpec("reset", (), help="Throw the sandbox away and start again.", extra={"runtime": _reset}),
    "mode": CommandSpec("mode", (Field("step", "bool", "Step mode", default=False),),
                        help="Step mode: one frame per engine event.", extra={"runtime": _mode}),
    "export": CommandSpec("export", (), help="The run as JSON (seed, lesson, command log, step).",
                          extra={"runtime": _export}),
    "import": CommandSpec("import", (Field("run", "str", "Run file", required=True,
                                           max_length=settings.KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"]),),
                          help="Replace the run with an exported one.", extra={"runtime": _import}),
    "share": CommandSpec("share", (), help="Store the run under a short id and get its link.",
                         extra={"runtime": _share}),
    "open_shared": CommandSpec("open_shared", (Field("id", "str", "Share id", required=True, max_length=8,
                                                     pattern=r"[A-Za-z0-9_-]{8}",
                                                     pattern_help="is not a share id"),),
                               help="Replace the run with a shared one.", extra={"runtime": _open_shared}),
}


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("publishing a frame failed", exc_info=task.exception())


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> Runtime:
    """This process's runtime, created on first use from settings."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            from channels.layers import get_channel_layer

            layer = get_channel_layer()
            _runtime = Runtime(settings.KAFKAVIZ_DATA_DIR, settings=settings.KAFKAVIZ_RUNTIME,
                               publish=layer.group_send if layer is not None else None)
        return _runtime


def set_runtime(runtime: Runtime | None) -> Runtime | None:
    """Swap this process's runtime (tests); returns the previous one."""
    global _runtime
    with _runtime_lock:
        previous, _runtime = _runtime, runtime
        return previous
