"""Which process runs a sandbox, and getting a socket's requests there.

One process (the embedded default, no ``REDIS_URL``): there is no router; ``get_router()``
is the local runtime.

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
import threading
import uuid
from collections import Counter
from typing import Any

from .runtime import READ_ONLY_COMMANDS, Runtime, get_runtime
from .validation import CommandError, command_name

log = logging.getLogger("kafkaviz.router")

__all__ = ["RedisRouter", "get_router", "OWNER_KEY", "RUN_KEY", "SOCKETS_KEY",
           "SANDBOXES_KEY", "PLACE_KEY"]

OWNER_KEY = "kafkaviz:owner:{}"
RUN_KEY = "kafkaviz:run:{}"
SOCKETS_KEY = "kafkaviz:sockets:{}"        # per client address: the lesson sockets open in any process
SANDBOXES_KEY = "kafkaviz:sandboxes:{}"    # per client address: the sandboxes it created, in any process
PLACE_KEY = "kafkaviz:place:{}"            # other capped places (a room member's sockets), in any process
ALIVE_KEY = "kafkaviz:alive:{}"            # per process (its channel): set every second by a thread of its own
ALIVE_TTL_S = 3              # a process whose alive key lapsed is gone (killed): its sandboxes are taken over at once
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
# Live places of each set in KEYS, expired ones dropped first (one call for a whole roster).
_COUNT_PLACES = """
local now = tonumber(redis.call('TIME')[1])
local out = {}
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  out[i] = redis.call('ZCARD', KEYS[i])
end
return out
"""
# Push the expiry of places this process still holds (ARGV: ttl, then the members).
_KEEP_PLACES = """
local expiry = tonumber(redis.call('TIME')[1]) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""


class RedisRouter:
    """Several processes on one Redis (see the module docstring). Its socket-side API is the
    runtime's own (attach, command, snapshot, detach, discard, reclaim_idle, the places and
    leases): one process without Redis talks to its :class:`Runtime` directly."""

    def __init__(self, layer: Any, redis_url: str, runtime: Runtime | None = None, *,
                 forward_timeout_s: float = FORWARD_TIMEOUT_S, owner_ttl_s: int = OWNER_TTL_S,
                 refresh_every_s: float = REFRESH_EVERY_S, alive_ttl_s: int = ALIVE_TTL_S) -> None:
        import redis.asyncio as aioredis

        self._runtime = runtime
        self.layer = layer
        self.redis_url = redis_url
        self.redis = aioredis.from_url(redis_url)
        self.alive_ttl_s = alive_ttl_s
        self._alive_stop = threading.Event()
        self.forward_timeout_s = forward_timeout_s
        self.owner_ttl_s = owner_ttl_s
        self.refresh_every_s = refresh_every_s
        self.channel: str | None = None
        self.owned: dict[str, float] = {}                     # sandbox → when this process claimed it
        self.watching: Counter[str] = Counter()               # sockets of this process per sandbox
        self.holders: dict[str, set[str]] = {}                # sandbox → this process's sockets on it
        self.meta: dict[str, tuple[str, str, str]] = {}       # sandbox → (slug, lang, address) of a watcher here
        self.pending: dict[str, asyncio.Future] = {}
        self.sockets: dict[str, list[str]] = {}               # address → this process's places in its socket quota
        self.sandbox_address: dict[str, str] = {}             # owned sandbox → the address whose quota it counts in
        self._socket_seq = 0
        self._adopting: dict[str, asyncio.Lock] = {}          # sandbox → held while it is being rebuilt here
        self._tasks: list[asyncio.Task] = []
        self._start_lock = asyncio.Lock()
        self._stopped = False

    @property
    def runtime(self) -> Runtime:
        return self._runtime or get_runtime()

    # ---- this process's channel ---------------------------------------------------
    async def start(self) -> str:
        async with self._start_lock:
            if self.channel is None:
                channel = await self.layer.new_channel()
                # Alive before anyone can see this channel as an owner; then a thread keeps it so
                # (a thread, not the event loop: a busy loop is slow, not dead).
                await self.redis.set(ALIVE_KEY.format(channel), 1, ex=self.alive_ttl_s)
                threading.Thread(target=self._keep_alive, args=(channel,), name="kafkaviz-alive",
                                 daemon=True).start()
                self.channel = channel
                self._tasks = [asyncio.ensure_future(self._receive_forever()),
                               asyncio.ensure_future(self._refresh_forever())]
            return self.channel

    def _keep_alive(self, channel: str) -> None:
        """This process is alive: its key is set every third of ``alive_ttl_s`` until it stops.
        A process killed with ``kill -9`` stops setting it, and the others take over its
        sandboxes within ``alive_ttl_s`` instead of waiting for its owner keys to go stale."""
        import redis

        client = redis.Redis.from_url(self.redis_url)
        key = ALIVE_KEY.format(channel)
        try:
            while not self._alive_stop.is_set():
                try:
                    client.set(key, 1, ex=self.alive_ttl_s)
                except Exception:  # noqa: BLE001 - retried; a long outage looks like a dead process
                    log.warning("keeping this process's alive key failed", exc_info=True)
                self._alive_stop.wait(self.alive_ttl_s / 3)
        finally:
            client.close()

    async def _gone(self, owner: str) -> bool:
        """The owner's process is gone: its alive key has lapsed."""
        return not await self.redis.exists(ALIVE_KEY.format(owner))

    async def stop(self) -> None:
        """Stop answering and refreshing (shutdown; tests use it to play a dead process)."""
        self._stopped = True
        self._alive_stop.set()
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

    # ---- leases (kafkaviz/live/leases.py) ---------------------------------------------
    async def keep(self, watchers: dict[str, list[str]], addresses: dict[str, list[str]],
                   places: dict[str, list[str]]) -> None:
        """The heartbeat: these sockets are alive. Their places in Redis get a new expiry;
        their watcher leases are renewed wherever the sandbox's engine is (an owner that
        died is taken over: live watchers need their sandbox)."""
        if addresses or places:
            async with self.redis.pipeline(transaction=False) as pipe:     # one round trip per beat
                for address, holders in addresses.items():
                    pipe.eval(_KEEP_PLACES, 1, SOCKETS_KEY.format(address), self.owner_ttl_s, *holders)
                for key, holders in places.items():
                    pipe.eval(_KEEP_PLACES, 1, PLACE_KEY.format(key), self.owner_ttl_s, *holders)
                await pipe.execute()

        async def renew(sid: str, holders: list[str]) -> None:
            try:
                await self._call("renew", sid, {"holders": holders})
            except CommandError:
                pass                                        # reclaimed, or busy: the next beat tries again
        await asyncio.gather(*(renew(sid, holders) for sid, holders in watchers.items()))

    async def take_place(self, key: str, holder: str, cap: int) -> bool:
        await self.start()
        return await self._take_place(PLACE_KEY.format(key), holder, cap or 1_000_000)

    async def drop_place(self, key: str, holder: str) -> None:
        await self._drop_place(PLACE_KEY.format(key), holder)

    async def count_places(self, keys: list[str]) -> list[int]:
        if not keys:
            return []
        counts = await self.redis.eval(_COUNT_PLACES, len(keys), *(PLACE_KEY.format(key) for key in keys))
        return [int(n) for n in counts]

    # ---- per-address quotas, shared by all processes ----------------------------------
    async def _take_place(self, key: str, member: str, cap: int) -> bool:
        return bool(await self.redis.eval(_TAKE_PLACE, 1, key, member, cap, self.owner_ttl_s))

    async def _drop_place(self, key: str, member: str) -> None:
        try:
            await self.redis.zrem(key, member)
        except Exception:  # noqa: BLE001 - the place lapses on its own when no longer renewed
            log.exception("releasing a place failed")

    async def open_connection(self, address: str, holder: str | None = None) -> bool:
        cap = int(self.runtime.settings.get("MAX_CONNECTIONS_PER_ADDRESS", 0) or 0)
        if not cap or not address:
            return True
        channel = await self.start()
        self._socket_seq += 1
        member = holder or f"{channel}/{self._socket_seq}"
        if not await self._take_place(SOCKETS_KEY.format(address), member, cap):
            return False
        self.sockets.setdefault(address, []).append(member)
        return True

    async def close_connection(self, address: str, holder: str | None = None) -> None:
        members = self.sockets.get(address)
        if not members:
            return
        if holder is None:
            member = members.pop()
        elif holder in members:
            members.remove(holder)
            member = holder
        else:
            return
        if not members:
            del self.sockets[address]
        await self._drop_place(SOCKETS_KEY.format(address), member)

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
        await self._settled(sid)
        if op == "attach":
            placed = await self._sandbox_place(sid, str(args.get("address", "")))
            try:
                result = await rt.attach(sid, str(args.get("slug")), str(args.get("lang", "en")),
                                         str(args.get("address", "")), str(args.get("room", "")),
                                         args.get("holder") or None)
            except BaseException:
                if placed:
                    self.sandbox_address.pop(sid, None)
                    await self.redis.zrem(SANDBOXES_KEY.format(placed), sid)
                raise
            await self._claimed(sid)
            return result
        if op == "discard_idle":
            if not await asyncio.to_thread(rt.discard_idle, sid):
                return False
            # Its place in the address's quota and its owner key go now, not at the next
            # refresh: the session is waiting for that place.
            await self.redis.eval(_RELEASE, 1, OWNER_KEY.format(sid), self.channel)
            self.owned.pop(sid, None)
            address = self.sandbox_address.pop(sid, "")
            if address:
                await self.redis.zrem(SANDBOXES_KEY.format(address), sid)
            return True
        if op == "renew":
            if sid not in rt.sandboxes and not await self.redis.exists(RUN_KEY.format(sid)):
                return -1                                   # reclaimed: nothing to bring back
            if sid not in rt.sandboxes:
                await self._adopt(sid)
            holders = [str(h) for h in (args.get("holders") or [])][:1000]
            return rt.renew(sid, holders)
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
            await rt.detach(sid, args.get("holder") or None)
            return None
        if op == "discard":
            await rt.discard(sid)
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

    async def _settled(self, sid: str) -> None:
        """Wait for a rebuild of ``sid`` in progress here (a takeover by another request or
        by the lease heartbeat): nothing runs on a sandbox before its run is restored."""
        lock = self._adopting.get(sid)
        if lock is not None and lock.locked():
            async with lock:
                pass

    async def _adopt(self, sid: str) -> None:
        """This process just became the owner: rebuild the sandbox from the last saved run
        (if any: a sandbox nobody owned before starts fresh at the first attach). One
        rebuild at a time per sandbox; other requests wait for it (``_settled``)."""
        lock = self._adopting.setdefault(sid, asyncio.Lock())
        try:
            async with lock:
                await self._adopt_now(sid)
        finally:
            if not lock.locked() and self._adopting.get(sid) is lock:
                del self._adopting[sid]

    async def _adopt_now(self, sid: str) -> None:
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
        # Attach once per socket this process has on it, so the new owner sees its watchers
        # (the other processes' watchers come back with their next lease renewal).
        holders = sorted(self.holders.get(sid, ()))
        for holder in holders:
            await self.runtime.attach(sid, slug, lang, address, holder=holder)
        for _ in range(max(0, self.watching[sid] - len(holders))):
            await self.runtime.attach(sid, slug, lang, address)
        if not self.runtime.has(sid):                       # nobody here watches it: build, unwatched
            await self.runtime.attach(sid, slug, lang, address, holder="adopt")
            await self.runtime.detach(sid, "adopt")
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
                await self._settled(sid)
                if op == "command":
                    return await self._command_here(sid, args)
                return await self._local(op, sid, args)
            if await self._gone(owner):
                # Killed (no alive key): no need to wait for a reply that cannot come.
                log.warning("owner process is gone; taking over", extra={"event": "owner_dead", "sandbox": sid[:8]})
                if await self.redis.eval(_TAKEOVER, 1, OWNER_KEY.format(sid), owner, self.channel, self.owner_ttl_s):
                    await self._adopt(sid)
                continue
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
                if ttl > self.owner_ttl_s - 1.5 * self.refresh_every_s and not await self._gone(owner):
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
                     room: str = "", holder: str | None = None) -> dict[str, Any]:
        self.meta[sandbox_id] = (slug, lang, address)
        try:
            result = await self._call("attach", sandbox_id, {"slug": slug, "lang": lang, "address": address,
                                                            "room": room, "holder": holder})
        except BaseException:
            if not self.watching[sandbox_id]:
                self.watching.pop(sandbox_id, None)
                self.meta.pop(sandbox_id, None)
            raise
        self.watching[sandbox_id] += 1
        if holder:
            self.holders.setdefault(sandbox_id, set()).add(holder)
        return result

    async def command(self, sandbox_id: str, message: Any, budget: str = "") -> dict[str, Any]:
        return await self._call("command", sandbox_id, {"message": message, "budget": budget})

    async def snapshot(self, sandbox_id: str, budget: str = "") -> dict[str, Any]:
        return await self._call("snapshot", sandbox_id, {"budget": budget})

    async def detach(self, sandbox_id: str, holder: str | None = None) -> None:
        self.watching[sandbox_id] -= 1
        if holder and sandbox_id in self.holders:
            self.holders[sandbox_id].discard(holder)
            if not self.holders[sandbox_id]:
                del self.holders[sandbox_id]
        if self.watching[sandbox_id] <= 0:
            del self.watching[sandbox_id]
            self.meta.pop(sandbox_id, None)
            self.holders.pop(sandbox_id, None)
        try:
            await self._call("detach", sandbox_id, {"holder": holder})
        except CommandError:
            pass                                            # gone already: nothing to detach from

    async def discard(self, sandbox_id: str) -> None:
        try:
            await self._call("discard", sandbox_id, {})
        except CommandError:
            pass

    async def reclaim_idle(self, sandbox_ids: list[str]) -> int:
        done = 0
        for sid in sandbox_ids:
            if await self.redis.get(OWNER_KEY.format(sid)) is None:
                continue                                    # not live anywhere (asking would rebuild it)
            try:
                done += bool(await self._call("discard_idle", sid, {}))
            except CommandError:
                pass
        return done


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a forwarded request failed", exc_info=task.exception())


_router: RedisRouter | None = None


def get_router() -> Runtime | RedisRouter:
    """Where this process sends a socket's requests: the Redis router when ``REDIS_URL`` is
    set, else straight to this process's runtime (no layer in between)."""
    global _router
    if _router is None:
        import os

        url = os.environ.get("REDIS_URL")
        if not url:
            return get_runtime()
        from channels_redis.core import RedisChannelLayer
        from django.conf import settings

        # A layer object of its own: its channel is read by its own loop, never queued behind
        # the consumers' reads on the shared layer (channels-redis reads one list per object).
        _router = RedisRouter(RedisChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"]), url)
    return _router
