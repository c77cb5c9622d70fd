"""Which process runs a sandbox, and getting a socket's requests there.

One process (the embedded default, no ``REDIS_URL``): the router is the local runtime.

Several processes on one Redis: a sandbox's engine lives in exactly one process, its
*owner*; the sockets watching it may be in any. Each process has a channel of its own on
the channel layer and a loop reading it. Ownership is a Redis key,
``kafkaviz:owner:<sandbox id>`` = the owner's channel, set with ``NX`` and an expiry the
owner refreshes every few seconds while the sandbox lives (and deletes when it reclaims
it). A socket's request (attach, command, snapshot, detach) goes to the local runtime if
this process owns the sandbox (or claims it: nobody does), otherwise to the owner's channel
as ``{"type": "runtime.request", "op", "sandbox", "args", "reply_to", "id"}``; the owner runs
it on its runtime and answers ``{"type": "runtime.reply", "id", "ok", "result" | "error"}``.

After every command the owner keeps what a restore needs under ``kafkaviz:run:<sandbox
id>``: the lesson, the language and the run (the export format of docs/web.md "Runs").
When the owner stops answering (no reply within ``FORWARD_TIMEOUT_S`` and its key no longer
refreshed, or expired), the next request claims the sandbox for the process that holds it, rebuilds the sandbox
from that run (the engine is deterministic: the same state) and carries on; the watchers
this process has are attached again so the new owner does not reclaim what they watch.
Frames need none of this: they are JSON texts on the sandbox's channel-layer group, which
every process's sockets are in; the first frame after a restore is a whole state.

Per-address quotas (``MAX_CONNECTIONS_PER_ADDRESS``, ``MAX_SANDBOXES_PER_ADDRESS``) are counted
across all processes: a sorted set per address (``kafkaviz:sockets:<address>``,
``kafkaviz:sandboxes:<address>``) whose members are this process's sockets and the sandboxes
it owns, each scored with an expiry (Redis's own clock) that the process refreshes with its
owner keys. Taking a place is one Lua script (drop expired members, count, add), so two
processes cannot both take the last one; a process that dies stops refreshing and its places
expire after ``OWNER_TTL_S``.
"""
from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from typing import Any

from .runtime import READ_ONLY_COMMANDS, Runtime, get_runtime
from .validation import CommandError, command_name

log = logging.getLogger("kafkaviz.router")

__all__ = ["LocalRouter", "RedisRouter", "get_router", "set_router", "OWNER_KEY", "RUN_KEY", "SOCKETS_KEY",
           "SANDBOXES_KEY"]

OWNER_KEY = "kafkaviz:owner:{}"
RUN_KEY = "kafkaviz:run:{}"
SOCKETS_KEY = "kafkaviz:sockets:{}"        # per client address: the lesson sockets open in any process
SANDBOXES_KEY = "kafkaviz:sandboxes:{}"    # per client address: the sandboxes it created, in any process
OWNER_TTL_S = 15             # an owner that stops refreshing loses its sandboxes this long after
REFRESH_EVERY_S = 5
FORWARD_TIMEOUT_S = 3.0      # a forwarded request unanswered this long: the owner is taken for dead
RUN_TTL_S = 24 * 3600
MAX_SAVED_RUN = 2_000_000    # bytes of a saved run (a lesson run is a few KB; a long sandbox run more)

# Compare-and-set on the owner key: refresh or release only what this process holds.
_REFRESH = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# Take over from an owner that did not answer: only if it is still the one we saw.
_TAKEOVER = ("if redis.call('get', KEYS[1]) == ARGV[1] or redis.call('exists', KEYS[1]) == 0 then "
             "redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 end return 0")
# A place in a per-address quota (KEYS[1]: the address's sorted set; ARGV: member, cap, ttl):
# expired places go first; a member that holds a place keeps it; else one is taken if fewer
# than cap are held. Returns 1 (held) or 0 (full).
_TAKE_PLACE = """
local now = tonumber(redis.call('TIME')[1])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('EXPIRE', KEYS[1], ttl)
return 1
"""
# Push the expiry of places this process still holds (ARGV: ttl, then the members).
_KEEP_PLACES = """
local expiry = tonumber(redis.call('TIME')[1]) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""


class LocalRouter:
    """One process: every request goes straight to this process's runtime."""

    def __init__(self, runtime: Runtime | None = None) -> None:
        self._runtime = runtime

    @property
    def runtime(self) -> Runtime:
        return self._runtime or get_runtime()

    async def attach(self, sandbox_id: str, slug: str, lang: str = "en", address: str = "",
                     room: str = "") -> dict[str, Any]:
        return await self.runtime.attach(sandbox_id, slug, lang, address, room)

    async def command(self, sandbox_id: str, message: Any, budget: str = "") -> dict[str, Any]:
        """``budget``: a room member's own budget (``Runtime.command``); "" spends the sandbox's."""
        return await self.runtime.command(sandbox_id, message, budget)

    async def snapshot(self, sandbox_id: str, budget: str = "") -> dict[str, Any]:
        return await self.runtime.snapshot(sandbox_id, budget)

    async def detach(self, sandbox_id: str) -> None:
        await self.runtime.detach(sandbox_id)

    async def discard(self, sandbox_id: str) -> None:
        await asyncio.to_thread(self.runtime.discard, sandbox_id)

    async def open_connection(self, address: str) -> bool:
        """Count a new lesson socket from ``address``; False if the address has the most allowed."""
        return self.runtime.open_connection(address)

    async def close_connection(self, address: str) -> None:
        self.runtime.close_connection(address)


class RedisRouter(LocalRouter):
    """Several processes on one Redis (see the module docstring)."""

    def __init__(self, layer: Any, redis_url: str, runtime: Runtime | None = None, *,
                 forward_timeout_s: float = FORWARD_TIMEOUT_S, owner_ttl_s: int = OWNER_TTL_S,
                 refresh_every_s: float = REFRESH_EVERY_S) -> None:
        super().__init__(runtime)
        import redis.asyncio as aioredis

        self.layer = layer
        self.redis = aioredis.from_url(redis_url)
        self.forward_timeout_s = forward_timeout_s
        self.owner_ttl_s = owner_ttl_s
        self.refresh_every_s = refresh_every_s
        self.channel: str | None = None
        self.owned: dict[str, float] = {}                     # sandbox → when this process claimed it
        self.watching: Counter[str] = Counter()               # sockets of this process per sandbox
        self.meta: dict[str, tuple[str, str, str]] = {}       # sandbox → (slug, lang, address) of a watcher here
        self.pending: dict[str, asyncio.Future] = {}
        self.sockets: dict[str, list[str]] = {}               # address → this process's places in its socket quota
        self.sandbox_address: dict[str, str] = {}             # owned sandbox → the address whose quota it counts in
        self._socket_seq = 0
        self._tasks: list[asyncio.Task] = []
        self._start_lock = asyncio.Lock()
        self._stopped = False

    # ---- this process's channel ---------------------------------------------------
    async def start(self) -> str:
        async with self._start_lock:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self._tasks = [asyncio.ensure_future(self._receive_forever()),
                               asyncio.ensure_future(self._refresh_forever())]
            return self.channel

    async def stop(self) -> None:
        """Stop answering and refreshing (shutdown; tests use it to play a dead process)."""
        self._stopped = True
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        await self.redis.aclose()

    async def _receive_forever(self) -> None:
        while not self._stopped:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a bad message must not stop the process's loop
                if self._stopped:
                    return
                log.exception("runtime channel receive failed")
                await asyncio.sleep(0.1)
                continue
            kind = message.get("type")
            if kind == "runtime.reply":
                future = self.pending.pop(str(message.get("id")), None)
                if future is not None and not future.done():
                    future.set_result(message)
            elif kind == "runtime.request":
                task = asyncio.ensure_future(self._serve(message))
                task.add_done_callback(_log_failure)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_every_s)
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis hiccups are retried at the next tick
                log.exception("refreshing sandbox ownership failed")

    async def refresh(self) -> None:
        """Keep the owner keys of live sandboxes; release those the runtime reclaimed (not
        one still being built: a claim comes before the engine exists)."""
        now = asyncio.get_running_loop().time()
        for sid, claimed in list(self.owned.items()):
            key = OWNER_KEY.format(sid)
            if self.runtime.has(sid) or now - claimed < 3 * self.refresh_every_s:
                if not await self.redis.eval(_REFRESH, 1, key, self.channel, self.owner_ttl_s):
                    self.owned.pop(sid, None)        # someone took it over: we are no longer the owner
                    self.sandbox_address.pop(sid, None)
                    log.warning("lost ownership", extra={"event": "ownership_lost", "sandbox": sid[:8]})
            else:
                await self.redis.eval(_RELEASE, 1, key, self.channel)
                self.owned.pop(sid, None)
                address = self.sandbox_address.pop(sid, "")
                if address:
                    await self.redis.zrem(SANDBOXES_KEY.format(address), sid)
        by_address: dict[str, list[str]] = {}
        for sid in self.owned:
            if sid in self.sandbox_address:
                by_address.setdefault(self.sandbox_address[sid], []).append(sid)
        for address, sids in by_address.items():
            await self.redis.eval(_KEEP_PLACES, 1, SANDBOXES_KEY.format(address), self.owner_ttl_s, *sids)
        for address, members in list(self.sockets.items()):
            if members:
                await self.redis.eval(_KEEP_PLACES, 1, SOCKETS_KEY.format(address), self.owner_ttl_s, *members)

    # ---- per-address quotas, shared by all processes ----------------------------------
    async def _take_place(self, key: str, member: str, cap: int) -> bool:
        return bool(await self.redis.eval(_TAKE_PLACE, 1, key, member, cap, self.owner_ttl_s))

    async def open_connection(self, address: str) -> bool:
        cap = int(self.runtime.settings.get("MAX_CONNECTIONS_PER_ADDRESS", 0) or 0)
        if not cap or not address:
            return True
        channel = await self.start()
        self._socket_seq += 1
        member = f"{channel}/{self._socket_seq}"
        if not await self._take_place(SOCKETS_KEY.format(address), member, cap):
            return False
        self.sockets.setdefault(address, []).append(member)
        return True

    async def close_connection(self, address: str) -> None:
        members = self.sockets.get(address)
        if not members:
            return
        member = members.pop()
        if not members:
            del self.sockets[address]
        try:
            await self.redis.zrem(SOCKETS_KEY.format(address), member)
        except Exception:  # noqa: BLE001 - the place expires on its own when no longer refreshed
            log.exception("releasing a socket place failed")

    async def _sandbox_place(self, sid: str, address: str) -> str:
        """A sandbox about to be created here counts in its address's quota across all
        processes. Returns the address whose place it took ("" when none was needed)."""
        cap = int(self.runtime.settings.get("MAX_SANDBOXES_PER_ADDRESS", 0) or 0)
        if not cap or not address or self.runtime.has(sid):
            return ""
        if not await self._take_place(SANDBOXES_KEY.format(address), sid, cap):
            raise CommandError("quota", f"Your address already has {cap} live sandboxes, the most one address "
                               "may hold. Close another lesson tab, or wait a minute after closing one.")
        self.sandbox_address[sid] = address
        return address

    # ---- serving requests for sandboxes this process owns ---------------------------
    async def _serve(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"type": "runtime.reply", "id": message.get("id")}
        try:
            reply.update(ok=True, result=await self._local(str(message.get("op")), str(message.get("sandbox")),
                                                          message.get("args") or {}))
        except CommandError as exc:
            reply.update(ok=False, error={"code": exc.code, "message": str(exc), "field": exc.field,
                                          "command": exc.command})
        except Exception as exc:  # noqa: BLE001 - the asker gets an error, never silence
            log.exception("serving a forwarded request failed")
            reply.update(ok=False, error={"code": "internal", "message": "Something went wrong on the server while "
                                          "running that command; it has been logged.", "field": None,
                                          "command": None})
        reply_to = message.get("reply_to")
        if isinstance(reply_to, str):
            await self.layer.send(reply_to, reply)

    async def _local(self, op: str, sid: str, args: dict[str, Any]) -> Any:
        rt = self.runtime
        if op == "attach":
            placed = await self._sandbox_place(sid, str(args.get("address", "")))
            try:
                result = await rt.attach(sid, str(args.get("slug")), str(args.get("lang", "en")),
                                         str(args.get("address", "")), str(args.get("room", "")))
            except BaseException:
                if placed:
                    self.sandbox_address.pop(sid, None)
                    await self.redis.zrem(SANDBOXES_KEY.format(placed), sid)
                raise
            await self._claimed(sid)
            return result
        if sid not in rt.sandboxes and op != "discard":
            # Reclaimed here while sockets in other processes still watched it (they are not
            # counted in this runtime): the saved run brings it back.
            await self._adopt(sid)
        if sid not in rt.sandboxes:
            raise CommandError("not_found", "This sandbox was reclaimed after being idle; reload the page.")
        if op == "command":
            return await self._command_here(sid, args)
        if op == "snapshot":
            return await rt.snapshot(sid, str(args.get("budget") or ""))
        if op == "detach":
            await rt.detach(sid)
            return None
        if op == "discard":
            await asyncio.to_thread(rt.discard, sid)
            return None
        raise CommandError("invalid", f"unknown runtime request {op[:20]!r}")

    async def _command_here(self, sid: str, args: dict[str, Any]) -> Any:
        message = args.get("message")
        result = await self.runtime.command(sid, message, str(args.get("budget") or ""))
        if command_name(message) not in READ_ONLY_COMMANDS:
            await self._save(sid)           # a read-only command changed nothing worth keeping again
        return result

    def _own(self, sid: str) -> None:
        self.owned.setdefault(sid, asyncio.get_running_loop().time())

    async def _claimed(self, sid: str) -> None:
        self._own(sid)
        await self._save(sid)

    async def _save(self, sid: str) -> None:
        run = await asyncio.to_thread(self.runtime.current_run, sid)
        if run is None:
            return
        text = json.dumps(run)
        if len(text) > MAX_SAVED_RUN:
            log.warning("run too long to keep for failover", extra={"event": "run_not_saved", "sandbox": sid[:8]})
            return
        await self.redis.set(RUN_KEY.format(sid), text, ex=RUN_TTL_S)

    # ---- the socket's side ------------------------------------------------------------
    async def _owner(self, sid: str) -> str:
        """The owner's channel, claiming the sandbox for this process when nobody owns it."""
        key = OWNER_KEY.format(sid)
        channel = await self.start()
        if await self.redis.set(key, channel, nx=True, ex=self.owner_ttl_s):
            await self._adopt(sid)
            return channel
        owner = await self.redis.get(key)
        if owner is None:                                   # expired between the two calls
            return await self._owner(sid)
        return owner.decode()

    async def _adopt(self, sid: str) -> None:
        """This process just became the owner: rebuild the sandbox from the last saved run
        (if any: a sandbox nobody owned before starts fresh at the first attach)."""
        self._own(sid)
        if self.runtime.has(sid):
            return
        saved = await self.redis.get(RUN_KEY.format(sid))
        meta = self.meta.get(sid)
        if saved is None and meta is None:
            return                                          # the first attach creates it
        info = json.loads(saved) if saved is not None else {}
        slug = info.get("slug") or meta[0]
        lang = info.get("lang") or meta[1]
        address = meta[2] if meta else ""
        # A new sandbox takes a place in its address's quota; one rebuilt after a takeover
        # keeps the place it had (the same member).
        await self._sandbox_place(sid, address)
        # Attach once per socket this process has on it, so the new owner sees its watchers.
        for _ in range(max(1, self.watching[sid])):
            await self.runtime.attach(sid, slug, lang, address)
        if self.watching[sid] == 0:
            await self.runtime.detach(sid)
        if info.get("data") is not None:
            try:
                await self.runtime.restore(sid, info["data"])
            except CommandError as exc:
                log.error("restoring a sandbox failed: %s", exc, extra={"event": "restore_failed", "sandbox": sid[:8]})
        log.info("sandbox restored", extra={"event": "sandbox_restored", "sandbox": sid[:8],
                                            "from_run": info.get("data") is not None})

    async def _call(self, op: str, sid: str, args: dict[str, Any]) -> Any:
        for _attempt in range(3):
            owner = await self._owner(sid)
            if owner == self.channel:
                if op == "command":
                    return await self._command_here(sid, args)
                return await self._local(op, sid, args)
            request_id = uuid.uuid4().hex
            future: asyncio.Future = asyncio.get_running_loop().create_future()
            self.pending[request_id] = future
            try:
                await self.layer.send(owner, {"type": "runtime.request", "op": op, "sandbox": sid, "args": args,
                                              "reply_to": self.channel, "id": request_id})
                reply = await asyncio.wait_for(future, self.forward_timeout_s)
            except asyncio.TimeoutError:
                # No answer. An owner that still refreshes its key is alive but slow: do not
                # run the sandbox twice. One that stopped refreshing is dead: take over (if it
                # is still the one we asked).
                ttl = await self.redis.ttl(OWNER_KEY.format(sid))
                if ttl > self.owner_ttl_s - 1.5 * self.refresh_every_s:
                    raise CommandError("busy", "The server that runs this sandbox is slow to answer; "
                                       "try again in a moment.") from None
                log.warning("owner did not answer; taking over", extra={"event": "owner_dead", "sandbox": sid[:8]})
                if await self.redis.eval(_TAKEOVER, 1, OWNER_KEY.format(sid), owner, self.channel, self.owner_ttl_s):
                    await self._adopt(sid)
                continue
            finally:
                self.pending.pop(request_id, None)
            if reply.get("ok"):
                return reply.get("result")
            err = reply.get("error") or {}
            raise CommandError(str(err.get("code", "internal")), str(err.get("message", "")), err.get("field"),
                               err.get("command"))
        raise CommandError("busy", "The server that runs this sandbox is not answering; try again shortly.")

    async def attach(self, sandbox_id: str, slug: str, lang: str = "en", address: str = "",
                     room: str = "") -> dict[str, Any]:
        self.meta[sandbox_id] = (slug, lang, address)
        try:
            result = await self._call("attach", sandbox_id, {"slug": slug, "lang": lang, "address": address,
                                                            "room": room})
        except BaseException:
            if not self.watching[sandbox_id]:
                self.watching.pop(sandbox_id, None)
                self.meta.pop(sandbox_id, None)
            raise
        self.watching[sandbox_id] += 1
        return result

    async def command(self, sandbox_id: str, message: Any, budget: str = "") -> dict[str, Any]:
        return await self._call("command", sandbox_id, {"message": message, "budget": budget})

    async def snapshot(self, sandbox_id: str, budget: str = "") -> dict[str, Any]:
        return await self._call("snapshot", sandbox_id, {"budget": budget})

    async def detach(self, sandbox_id: str) -> None:
        self.watching[sandbox_id] -= 1
        if self.watching[sandbox_id] <= 0:
            del self.watching[sandbox_id]
            self.meta.pop(sandbox_id, None)
        try:
            await self._call("detach", sandbox_id, {})
        except CommandError:
            pass                                            # gone already: nothing to detach from

    async def discard(self, sandbox_id: str) -> None:
        try:
            await self._call("discard", sandbox_id, {})
        except CommandError:
            pass


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a forwarded request failed", exc_info=task.exception())


_router: LocalRouter | None = None


def get_router() -> LocalRouter:
    """This process's router: Redis-backed when ``REDIS_URL`` is set, else the local runtime."""
    global _router
    if _router is None:
        import os

        url = os.environ.get("REDIS_URL")
        if url:
            from channels_redis.core import RedisChannelLayer
            from django.conf import settings

            # A layer object of its own: its channel is read by its own loop, never queued behind
            # the consumers' reads on the shared layer (channels-redis reads one list per object).
            _router = RedisRouter(RedisChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"]), url)
        else:
            _router = LocalRouter()
    return _router


def set_router(router: LocalRouter | None) -> LocalRouter | None:
    """Swap this process's router (tests); returns the previous one."""
    global _router
    previous, _router = _router, router
    return previous
